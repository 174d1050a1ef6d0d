/// A SQL statement whose values travel separately from its text.
///
/// Write it with string interpolation; every interpolated value becomes a `$n` bind parameter:
///
///     let query: PostgresQuery = "SELECT state FROM jobs WHERE id = \(jobID) AND priority > \(minimum)"
///     // sql: "SELECT state FROM jobs WHERE id = $1 AND priority > $2", two bound values
///
/// The literal parts are `StaticString`s, so text computed at run time can never become SQL: there
/// is no way to write an injection. Identifiers that must be spelled in the text (a database name
/// in `CREATE DATABASE`) go through `\(identifier: name)`, which quotes them.
public struct PostgresQuery: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public typealias StringLiteralType = StaticString

    enum Part: Sendable {
        case sql(String)
        case bind(PostgresBind)
    }

    private(set) var parts: [Part]

    public init(stringLiteral value: StaticString) {
        parts = [.sql(value.description)]
    }

    public init(stringInterpolation: StringInterpolation) {
        parts = stringInterpolation.parts
    }

    /// The statement text with `$1, $2, …` placeholders, and the values in the same order.
    var rendered: (sql: String, binds: [PostgresBind]) {
        var sql = ""
        var binds: [PostgresBind] = []
        for part in parts {
            switch part {
            case .sql(let text):
                sql += text
            case .bind(let bind):
                binds.append(bind)
                sql += "$\(binds.count)"
            }
        }
        return (sql, binds)
    }

    /// The SQL text with placeholders; the values are not shown (they may be secrets).
    public var description: String { rendered.sql }

    /// Builds a query from interpolation segments.
    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        public typealias StringLiteralType = StaticString
        fileprivate var parts: [Part] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            parts.reserveCapacity(interpolationCount * 2 + 1)
        }

        public mutating func appendLiteral(_ literal: StaticString) {
            parts.append(.sql(literal.description))
        }

        /// Binds `value` as the next `$n` parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            parts.append(.bind(PostgresBind(value)))
        }

        /// Binds an optional value (nil is SQL NULL) as the next `$n` parameter.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            parts.append(.bind(PostgresBind(value)))
        }

        /// Splices another query in (its values are renumbered), for composing statements from parts.
        public mutating func appendInterpolation(_ fragment: PostgresQuery) {
            parts += fragment.parts
        }

        /// Spells an identifier into the text, double-quoted with embedded quotes doubled.
        public mutating func appendInterpolation(identifier: String) {
            parts.append(.sql(PostgresQuery.quoteIdentifier(identifier)))
        }
    }

    /// `name` as a quoted SQL identifier: `"name"`, with `"` doubled and NUL removed.
    static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacing("\0", with: "").replacing("\"", with: "\"\"") + "\""
    }
}

/// One bound value: its text form (nil for SQL NULL) and its type.
struct PostgresBind: Sendable, Equatable {
    var text: String?
    var type: PostgresType

    init(_ value: some PostgresEncodable) {
        text = value.postgresText
        type = Swift.type(of: value).postgresType
    }
}
