"""ServeScope: a visual explorer of LLM serving-engine internals."""

__version__ = "0.1.0"
