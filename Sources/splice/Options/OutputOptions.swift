import SpliceMedia

/// Whether a command may replace its output file, and the check of the output made before any
/// work: `-y` / `--overwrite`, shared by `export`, `transcode` and `stitch` (and meant for any
/// command that names an output, `submit` included: append ``arguments`` to its table).
struct OutputOptions: OptionGroup {
    static let overwrite = Flag("overwrite", short: "y",
        help: "Replace the output file if it already exists (never the input).")

    static let arguments: [any ArgumentDeclaration] = [overwrite]

    var overwrite: Bool

    init(_ arguments: ParsedArguments) throws {
        overwrite = arguments[Self.overwrite]
    }

    /// Refuses, before any input is opened, an output that is one of `inputs`, is a folder,
    /// exists (without `-y`) or lies in a folder that is missing or not writable. The commands
    /// call it from `validate()`; the ``MediaError`` it throws exits 1 with its one line.
    func check(output: String, inputs: [String]) throws {
        try OutputDestination.check(output: output, inputs: inputs, overwrite: overwrite)
    }

    /// The output's last name (`out.mp4` of `/srv/out.mp4` or of `s3://media/show/out.mp4`), for progress bars.
    static func name(of output: String) -> String {
        output.split(separator: "/").last.map(String.init) ?? output
    }
}
