/// SpliceWire: ZeroMQ in Swift and the Splice cluster protocol (messages, framing, CURVE).
public enum SpliceWire {}
