"""MamboMeme: find the meme you remember, in one local SQLite file.

The command line is mambo.py (its commands in mambomeme/cli.py); this package holds the rooms
it calls (README, "How it is built")."""
