"""The application layer and composition root, shared by both faces (Qt-free).

``services`` builds every runtime object (the one place that does); ``doorway`` describes
what the window may ask and ``window_doorway`` implements it; ``documents`` reads the
formats both faces open; ``detect_process`` runs the window's detector in a child process;
``presentation`` holds display helpers.
"""
