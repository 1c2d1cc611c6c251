"""Arena placement: give buffers offsets in one memory region of a tile."""
