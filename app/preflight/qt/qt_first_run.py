"""The first-run guide: six short pages over a sample HR e-mail, shown once at the first
start and again from Help → Show the guide.

The guide is not modal: the user opens the sample, then reads each page beside the
window and tries what it names (a highlight, the policy, the ε slider, the prediction,
the send confirmation, Keep local) — well under a minute in all.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from preflight.app import first_run
from preflight.qt.qt_shortcuts import menu_named

#: (title, text) of each page; the words in “quotes” are the window's own labels.
PAGES: tuple[tuple[str, str], ...] = (
    ("Welcome to Preflight",
     ("Preflight checks a document <b>before</b> it goes to a cloud model: it finds the "
     "personal data, replaces it, predicts whether the answer will still be useful, and "
     "sends only what you confirm.<br><br>Click <b>“Open the sample”</b> below: an HR "
     "e-mail with names, an e-mail address, a phone number, a salary, an employee ID and "
     "a password loads into the editor.")),
    ("1 · Highlights",
     ("Detected values are coloured by kind: direct identifiers (names, e-mail, phone), "
     "quasi-identifiers (salary, dates, places) and secrets (the password).<br><br>"
     "<b>Click</b> a highlight to exclude it (it is then sent as written); "
     "<b>right-click</b> it to change what happens to its kind, or select any text and "
     "right-click to add it to your deny-list.")),
    ("2 · Methods",
     ("The <b>“Policy”</b> box decides what each kind gets: a placeholder "
     "(<code>&lt;PERSON_1&gt;</code>), a realistic pseudonym, a generalization "
     "(a coarser value) or d_X noise. The preview on the right shows exactly the text that "
     "would be sent; changed words are marked.")),
    ("3 · The ε slider",
     ("With a policy “+ d_X”, the <b>ε slider</b> sets how much noise replaces words: "
     "small ε means more noise and more privacy, large ε keeps more of the text. "
     "<b>“Resample”</b> draws new noise at the same ε.")),
    ("4 · The prediction",
     ("The assessment panel predicts how close the cloud's answer on the sanitized text "
     "will be to an answer on the original (0 to 1, with its error band), and shows the "
     "privacy left. <b>“Find best ε”</b> searches the most private ε that still meets "
     "your minimum utility.")),
    ("5 · Send, or keep it local",
     ("<b>“Send”</b> never sends at once: a confirmation shows the exact request, the "
     "provider and the cost, and every value that still looks personal needs its own "
     "tick. The answer comes back with the real names restored, on this computer only."
     "<br><br><b>“Keep local”</b> answers with the local model instead: nothing leaves "
     "the machine. Every send is in <b>History</b>. Reopen this guide from Help.")),
)


class QtFirstRunGuide(QDialog):
    """The guide's pages, Back/Next, and “Open the sample” (through the window's Open)."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window_ = window
        self.setObjectName("firstRunGuide")
        self.setWindowTitle("Preflight — a one-minute guide")
        self.setModal(False)
        self.resize(460, 330)
        lay = QVBoxLayout(self)
        self.pages = QStackedWidget()
        for title, text in PAGES:
            self.pages.addWidget(_page(title, text))
        lay.addWidget(self.pages, 1)
        row = QHBoxLayout()
        self.open_sample = QPushButton("Open the sample")
        self.open_sample.setObjectName("openSample")
        self.open_sample.clicked.connect(self._open_sample)
        self.position = QLabel("")
        self.position.setObjectName("muted")
        self.back = QPushButton("Back")
        self.back.clicked.connect(lambda: self.show_page(self.pages.currentIndex() - 1))
        self.next = QPushButton("Next")
        self.next.setDefault(True)
        self.next.clicked.connect(self._next)
        row.addWidget(self.open_sample)
        row.addStretch(1)
        row.addWidget(self.position)
        row.addWidget(self.back)
        row.addWidget(self.next)
        lay.addLayout(row)
        self.show_page(0)

    def show_page(self, index: int) -> None:
        index = max(0, min(index, self.pages.count() - 1))
        self.pages.setCurrentIndex(index)
        last = index == self.pages.count() - 1
        self.back.setEnabled(index > 0)
        self.next.setText("Done" if last else "Next")
        self.position.setText(f"{index + 1} / {self.pages.count()}")

    def _next(self) -> None:
        if self.pages.currentIndex() == self.pages.count() - 1:
            self.accept()
        else:
            self.show_page(self.pages.currentIndex() + 1)

    def _open_sample(self) -> None:
        self.window_.open_file(str(first_run.sample_path()))
        self.show_page(max(1, self.pages.currentIndex()))


def _page(title: str, text: str) -> QWidget:
    w = QWidget()
    lay = QVBoxLayout(w)
    head = QLabel(f"<h3>{title}</h3>")
    body = QLabel(text)
    body.setWordWrap(True)
    body.setTextFormat(Qt.TextFormat.RichText)
    body.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    lay.addWidget(head)
    lay.addWidget(body, 1)
    return w


def show_guide(window: QMainWindow) -> QtFirstRunGuide:
    """Open the guide beside ``window`` (and remember that it was seen)."""
    guide = QtFirstRunGuide(window)
    guide.show()
    geo = window.frameGeometry()
    guide.move(geo.right() - guide.width() - 24, geo.top() + 80)
    first_run.mark_guide_seen()
    return guide


def show_guide_once(window: QMainWindow) -> QtFirstRunGuide | None:
    """At start: the guide, unless it was seen before."""
    return None if first_run.guide_seen() else show_guide(window)


def install_help_menu(window: QMainWindow) -> QAction:
    """Help → Show the guide, in ``window``'s menu bar (its Help menu when it has one)."""
    menu = menu_named(window, "&Help")
    action = QAction("Show the guide", window)
    action.setObjectName("showGuide")
    action.triggered.connect(lambda: show_guide(window))
    menu.addAction(action)
    return action
