/// What the server answered.
struct HTTPResponse: Sendable {
    var status: Int
    /// Response headers, names lowercased, in the order received (of the final response only).
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    /// The first header called `name` (give it lowercase).
    func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// Whether the status is 2xx.
    var isSuccess: Bool { (200..<300).contains(status) }
}
