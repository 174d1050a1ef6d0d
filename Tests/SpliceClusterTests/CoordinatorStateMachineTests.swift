// Unit tests of the coordinator state machine follow.
