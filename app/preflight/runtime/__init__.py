"""Heavy model backends (llama.cpp, sentence-transformers, token embeddings, model files).

Nothing here imports Qt; the core reaches these through small protocols so tests can
swap in fakes.
"""
