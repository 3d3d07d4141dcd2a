"""wh's cache folder and what it remembers: stat keys, code stamps, wheels proven sound."""
