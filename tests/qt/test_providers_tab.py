"""Settings → Providers: presets, "Test connection" against a real loopback server, URL
validation on save, and where the key comes from (the real application layer)."""

from __future__ import annotations

from loopback import LoopbackLLM
from PySide6.QtWidgets import QMessageBox

from preflight.core.config import settings_path


def _labels(menu):
    return [a.text() for a in menu.actions()]


def _choose_preset(tab, label):
    act = next(a for a in tab.add_preset.menu().actions() if a.text() == label)
    act.trigger()


def test_presets_fill_url_style_and_model(qtbot, window):
    dlg = window.open_settings("providers")
    tab = dlg.providers
    assert _labels(tab.add_preset.menu())[:3] == ["OpenAI", "Azure OpenAI", "Mistral"]
    _choose_preset(tab, "Google Gemini (OpenAI-compatible endpoint)")
    assert tab.name.text() == "gemini"
    assert tab.base_url.text() == "https://generativelanguage.googleapis.com/v1beta/openai"
    assert tab.model.text() == "gemini-2.0-flash" and tab.style.currentData() == "chat"
    _choose_preset(tab, "Local Ollama")
    assert tab.base_url.text() == "http://127.0.0.1:11434/v1" and tab.model.text() == "llama3.2"
    assert "ollama list" in tab.test.state.text()
    # not StopIteration: a server on this computer needs no key
    assert tab.key_state.text() == "Key: none needed (a server on this computer)"
    _choose_preset(tab, "Mistral")
    assert tab.key_state.text().startswith("Key: none set")
    dlg.reject()


def test_test_connection_reaches_the_loopback_server_with_the_key(qtbot, window, door):
    with LoopbackLLM(["hi"], models=("qwen-7b", "llama3.2"), key="sk-local") as srv:
        dlg = window.open_settings("providers")
        tab = dlg.providers
        _choose_preset(tab, "Local vLLM server")
        tab.base_url.setText(srv.base_url)
        tab.base_url.editingFinished.emit()
        tab.model.setText("qwen-7b")
        tab.model.editingFinished.emit()
        tab.test.button.click()                        # no key yet: the server says 401
        qtbot.waitUntil(lambda: tab.test.state.text().startswith("✘"), timeout=5000)
        assert "rejected the API key (HTTP 401)" in tab.test.state.text()
        assert door.set_key(tab._current(), "sk-local", False) == "session"
        tab.test.button.click()
        qtbot.waitUntil(lambda: tab.test.state.text().startswith("✔"), timeout=5000)
        assert tab.test.state.text() == "✔ Connected — 2 models; qwen-7b is among them."
        assert [g[0] for g in srv.gets] == ["/v1/models", "/v1/models"]
        assert all(body == b"" for _p, _h, body in srv.gets) and srv.bodies == []
        assert not settings_path().exists()            # testing does not save
        dlg.reject()


def test_test_connection_reports_a_wrong_url(qtbot, window):
    with LoopbackLLM(["hi"]) as srv:
        dlg = window.open_settings("providers")
        tab = dlg.providers
        tab.list.setCurrentRow(0)
        tab.base_url.setText(srv.base_url.replace("/v1", "/nothing"))
        tab.base_url.editingFinished.emit()
        tab.test.button.click()
        qtbot.waitUntil(lambda: tab.test.state.text().startswith("✘"), timeout=5000)
        assert "No OpenAI-compatible API" in tab.test.state.text()
        assert "HTTP 404" in tab.test.state.text()
        dlg.reject()


def test_save_refuses_an_invalid_url(qtbot, window):
    dlg = window.open_settings("providers")
    tab = dlg.providers
    tab._add()
    tab.base_url.setText("ftp://files.example.com/v1")
    tab.base_url.editingFinished.emit()
    dlg.accept()
    qtbot.waitUntil(lambda: bool(dlg.findChildren(QMessageBox)), timeout=3000)
    box = dlg.findChildren(QMessageBox)[-1]
    assert "invalid base URL" in box.text() and "https://" in box.informativeText()
    assert not settings_path().exists() and dlg.isVisible()
    box.close()
    tab.base_url.setText("http://192.0.2.7/v1")          # cleartext to another machine
    tab.base_url.editingFinished.emit()
    dlg.accept()
    qtbot.waitUntil(lambda: any("plain http://" in b.text()
                                for b in dlg.findChildren(QMessageBox)), timeout=3000)
    assert not settings_path().exists()
    tab.base_url.setText("https://api.example.com/v1")
    tab.base_url.editingFinished.emit()
    dlg.accept()
    assert settings_path().exists()                     # saved this time


def test_context_window_follows_the_preset_and_is_saved(qtbot, window):
    from preflight.core.config import CONTEXT_TOKENS_DEFAULT

    dlg = window.open_settings("providers")
    tab = dlg.providers
    _choose_preset(tab, "Google Gemini (OpenAI-compatible endpoint)")
    assert tab.context.value() == 1_048_576
    _choose_preset(tab, "Local Ollama")
    assert tab.context.value() == 4096
    tab._add()                                    # "Add" (a custom provider)
    assert tab.context.value() == CONTEXT_TOKENS_DEFAULT           # a custom one: stated
    assert f"{CONTEXT_TOKENS_DEFAULT:,}" in tab.context.toolTip()
    tab.context.setValue(200_000)
    assert tab._current().context_tokens == 200_000
    dlg.reject()
