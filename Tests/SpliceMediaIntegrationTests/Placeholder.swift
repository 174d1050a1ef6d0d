// Tests arrive with the module's first real code.
