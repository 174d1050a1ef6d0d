/// Comparisons whose time does not depend on where two secrets differ: tokens' hashes and
/// webhook signatures are compared with these, never with `==`.
public enum ConstantTime {
    /// Whether `lhs` and `rhs` hold the same bytes, in a time that depends only on their lengths.
    public static func equals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
        return difference == 0
    }
}
