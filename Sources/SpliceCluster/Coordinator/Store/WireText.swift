public import Foundation
public import SpliceWire

// The wire carries the store's UUIDs as lowercase text (job ids, lease tokens); these are the
// only conversions between the two.

extension UUID {
    /// The lowercase text form the protocol and the API use.
    public var wireText: String { uuidString.lowercased() }
}

extension JobID {
    /// The wire form of a store job id.
    public init(_ id: UUID) { self.init(rawValue: id.wireText) }
    /// The store id, when the text is a UUID.
    public var uuid: UUID? { UUID(uuidString: rawValue) }
}

extension LeaseToken {
    /// The wire form of a store lease token.
    public init(_ token: UUID) { self.init(rawValue: token.wireText) }
    /// The store token, when the text is a UUID.
    public var uuid: UUID? { UUID(uuidString: rawValue) }
}
