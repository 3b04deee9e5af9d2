"""Environments: gymnasium env construction, vectorised and threaded envs, text spaces."""
