// Tests for this target arrive with the module's first real code.
