"""Slow reference decoding loops, one module per upstream family, each written from reading the
authors' code (the module names the file and commit it follows). Tests run them beside the
engine on the same tiny model and compare the canvas after every round."""
