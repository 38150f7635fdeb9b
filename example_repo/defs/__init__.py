"""The Component-configured definitions of the example (one ``defs.yaml`` per component)."""
