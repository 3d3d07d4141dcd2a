"""One wheel file: its zip directory, metadata, natives, portable names; writing wheels."""
