"""Model backends: one small protocol, several families (DESIGN.md, "Backends")."""
