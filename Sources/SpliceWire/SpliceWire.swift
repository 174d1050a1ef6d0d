/// SpliceWire: ZeroMQ in Swift and the Splice cluster protocol (messages, framing, CURVE).
///
/// Layers, bottom up:
/// - `Internal/`: the raw libzmq layer (`RawSocket`, `RawPoller`, the socket thread). Never public.
/// - `Socket/`: `WireContext`, `WireEndpoint` (one socket on its own thread, async API), options,
///   peers and connection events.
/// - `Security/`: CURVE keys and key files, the ZAP handler and `Authorizer`s, the bind policy.
/// - `Protocol/`: the versioned message envelope, the worker and client-API message catalogues,
///   total decoding with typed rejections, counters, and `MessageEndpoint`.
public enum SpliceWire {}
