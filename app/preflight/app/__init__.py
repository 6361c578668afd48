"""The application layer and composition root, shared by both faces (Qt-free).

``services`` builds every runtime object (the one place that does; ``ports`` names what
fills each heavy port); ``rules`` holds the rules both faces apply; ``window_doorway`` is
the application as the window sees it; ``documents`` reads the formats both faces open;
``detect_process`` runs the window's detector in a child process; ``presentation`` holds
display helpers.
"""
