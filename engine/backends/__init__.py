"""Model backends: one small protocol (base.py), several kinds of model (docs/ARCHITECTURE.md,
"The backend protocol")."""
