import Foundation

/// Columns of text aligned for a terminal: `splice jobs` and `splice workers`.
///
///     JOB       STATE    SEGMENTS
///     4f1c…     running  5/12
struct TextTable {
    var headers: [String]
    var rows: [[String]] = []

    /// The header line and one line per row; each column as wide as its widest cell, two spaces
    /// apart, the last column not padded (no trailing blanks).
    var lines: [String] {
        var widths = headers.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() where column < widths.count {
                widths[column] = max(widths[column], cell.count)
            }
        }
        return ([headers] + rows).map { cells in
            cells.enumerated().map { column, cell in
                column == cells.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }
    }
}

extension TextOutput {
    /// Writes `value` as pretty-printed JSON with sorted keys (the `--json` output of commands).
    func writeJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        writeLine(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}
