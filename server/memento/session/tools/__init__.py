"""The tools the model may call. Names and argument names are fixed (see ARCHITECTURE §3)."""
