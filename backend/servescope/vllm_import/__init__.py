"""Reading vLLM's own command lines and engine arguments into a ServeScope config, with the
feature-compatibility check."""
