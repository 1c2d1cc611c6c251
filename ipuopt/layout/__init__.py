"""Layout selection: one implementation per operator, exactly, within memory."""
