"""The program that runs inside the sandbox container (and its wire format)."""
