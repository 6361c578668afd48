"""The window: the only package that imports PySide6.

PySide6 is pinned to 6.11.3: 6.12.0 returns None from every void method (setX, stop…)
without taking a reference, and on Python 3.11 a long session aborts with "Fatal Python
error: none_dealloc" (tests/qt/test_window.py::test_void_qt_calls_cannot_free_none).
"""
