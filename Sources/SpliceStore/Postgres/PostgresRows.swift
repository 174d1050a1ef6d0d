/// The rows a statement returned (copied out of libpq's result, so they are plain Swift values),
/// plus how many rows it changed.
public struct PostgresRows: Sendable, RandomAccessCollection {
    /// Column names, in order.
    public let columns: [String]
    let values: [[String?]]
    /// Rows inserted, updated or deleted by the statement (0 for other statements).
    public let affectedRows: Int
    /// The server's command tag (`INSERT 0 1`, `COMMIT`, `ROLLBACK`, …).
    public let commandTag: String

    init(columns: [String], values: [[String?]], affectedRows: Int, commandTag: String) {
        self.columns = columns
        self.values = values
        self.affectedRows = affectedRows
        self.commandTag = commandTag
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { values.count }
    public subscript(position: Int) -> PostgresRow { PostgresRow(columns: columns, values: values[position]) }
}

/// One result row; decode its columns by name or position into Swift types.
public struct PostgresRow: Sendable {
    /// Column names, in order.
    public let columns: [String]
    let values: [String?]

    /// The column named `column`, decoded as `T` (use an Optional type for nullable columns).
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, column: String) throws(StoreError) -> T {
        guard let index = columns.firstIndex(of: column) else {
            throw StoreError(.decodingFailed, "the result has no column \(column)")
        }
        return try decode(type, at: index)
    }

    /// The column at `index`, decoded as `T`.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, at index: Int) throws(StoreError) -> T {
        guard values.indices.contains(index) else {
            throw StoreError(.decodingFailed, "the result has no column number \(index)")
        }
        do {
            return try T.decode(postgresText: values[index])
        } catch let issue as PostgresDecodingIssue {
            throw StoreError(.decodingFailed, "column \(columns[index]) as \(T.self): \(issue.reason)")
        } catch {
            throw StoreError(.decodingFailed, "column \(columns[index]) as \(T.self): \(error)")
        }
    }
}
