import SpliceLog

#if canImport(Glibc)
import Glibc
#endif

/// A text stream a command writes to, and whether a person is watching it.
///
/// The real ones are ``standardOutput`` and ``standardError``; tests build one around a closure
/// that collects the text.
struct TextOutput: Sendable {
    /// Whether the stream is a terminal: progress redraws in place there, prints plain lines elsewhere.
    let isTerminal: Bool
    /// The terminal's width in columns; 80 when unknown or not a terminal.
    let columns: Int
    private let sink: @Sendable (String) -> Void

    init(isTerminal: Bool, columns: Int = 80, write: @escaping @Sendable (String) -> Void) {
        self.isTerminal = isTerminal
        self.columns = columns
        sink = write
    }

    /// Writes `text` as is.
    func write(_ text: String) {
        sink(text)
    }

    /// Writes `line` and a newline.
    func writeLine(_ line: String) {
        sink(line + "\n")
    }

    static var standardOutput: TextOutput { TextOutput(FileDescriptorWriter.standardOutput) }
    static var standardError: TextOutput { TextOutput(FileDescriptorWriter.standardError) }

    private init(_ writer: FileDescriptorWriter) {
        let isTerminal = writer.isTerminal
        var size = winsize()
        let columns = isTerminal && ioctl(writer.fileDescriptor, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0
            ? Int(size.ws_col) : 80
        self.init(isTerminal: isTerminal, columns: columns, write: { writer.write($0) })
    }
}
