internal import CSpliceSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where a job's output file goes: the checks made before any work starts, and the final move of
/// the finished file into place.
///
/// An output in storage (`s3://…`) is checked by its storage (``MediaStorage/checkOutput(_:overwrite:)``:
/// the bucket reachable with the credentials, nothing there without overwrite).
///
/// `splice export`, `transcode` and `stitch` call ``check(output:inputs:overwrite:)`` before they
/// open their input; ``ExportSession``, ``Transcoder`` and ``Stitcher`` call it again before they
/// write; the coordinator can call it when a job is submitted, to refuse a job that could never
/// finish. Every refusal is a one-line ``MediaError`` that names the path and what to do, with
/// `isRetryable` false: the same job will fail the same way until the user changes something.
public enum OutputDestination {
    /// Checks that a job reading `inputs` may write `output`, before anything is read or encoded.
    ///
    /// Refuses, in this order:
    /// - an output that is the same file as one of `inputs` (the same device and inode, so also a
    ///   symbolic or hard link to it), whatever `overwrite` says — code `invalidSettings`;
    /// - an output that is a folder, or something other than a regular file (a device such as
    ///   `/dev/null`, a pipe, a socket) — code `invalidSettings`;
    /// - an output that exists (even as a dangling symbolic link) when `overwrite` is false —
    ///   code `outputExists`;
    /// - an output whose folder does not exist, is not a folder, or does not let this process
    ///   create files — code `writeFailed`. Writability is probed by creating and removing a
    ///   small hidden file in the folder (`O_CREAT|O_EXCL`), because `access(2)` answers wrongly
    ///   on NFS, read-only mounts and `/proc`.
    ///
    /// Passing the checks does not reserve the name: the file is written beside the destination
    /// and moved into place when complete, and without `overwrite` that move refuses a file that
    /// appeared meanwhile (``MediaError/Code/outputExists``).
    ///
    /// This makes a few file-system calls, which can block on a slow or unreachable network
    /// share; an `async` caller that must not stall Swift's cooperative pool should call it from a
    /// thread of its own.
    ///
    /// - Parameters:
    ///   - output: The file to write, as the user gave it (relative paths are taken from the
    ///     current directory). Messages quote it as given.
    ///   - inputs: The files the job reads. `file://` URLs are compared as paths; other URLs
    ///     (`https://…`) and inputs that do not exist are skipped — opening them reports those.
    ///   - overwrite: Whether an existing file at `output` may be replaced (`-y`, `--overwrite`).
    ///     Never allows replacing an input.
    /// - Throws: ``MediaError`` with code `invalidSettings`, `outputExists` or `writeFailed`.
    public static func check(output: String, inputs: [String], overwrite: Bool) throws(MediaError) {
        guard !output.isEmpty else { throw MediaError(.invalidSettings, "the output path is empty; give a file name") }
        guard !output.hasSuffix("/") else {
            throw MediaError(.invalidSettings, "'\(output)' names a folder; give the output a file name")
        }
        if let storage = try StorageRegistry.storage(for: output) {
            // In storage: the location must be valid, its bucket reachable with these
            // credentials, and nothing there unless `overwrite`; an object is never its own input.
            try storage.validate(output)
            if inputs.contains(output) {
                throw MediaError(.invalidSettings, "the output '\(output)' is the input; choose another output name; "
                                 + "Splice never writes over its input, even when allowed to overwrite")
            }
            try storage.checkOutput(output, overwrite: overwrite)
            return
        }
        let path = absolute(output)

        var target = stat()
        if stat(path, &target) == 0 {
            for input in inputs {
                guard let inputPath = localPath(input) else { continue }
                var source = stat()
                if stat(inputPath, &source) == 0, source.st_dev == target.st_dev, source.st_ino == target.st_ino {
                    throw MediaError(.invalidSettings, "the output '\(output)' is the input '\(input)' (the same file); "
                                     + "choose another output name; Splice never writes over its input, even when allowed to overwrite")
                }
            }
            let type = target.st_mode & S_IFMT
            if type == S_IFDIR {
                throw MediaError(.invalidSettings, "'\(output)' is a folder; give the output a file name inside it")
            }
            if type != S_IFREG {
                throw MediaError(.invalidSettings, "'\(output)' is not a regular file (a device, pipe or socket); "
                                 + "Splice writes a new file and moves it into place, so give the path of a file")
            }
        }
        var entry = stat()
        if !overwrite, lstat(path, &entry) == 0 {
            throw exists(output)
        }
        try checkFolder(of: path, output: output)
    }

    /// The error for an output that exists and may not be replaced, in the CLI's words (`splice
    /// submit` says it for the coordinator's `output-exists`).
    public static func exists(_ output: String) -> MediaError {
        MediaError(.outputExists, "'\(output)' already exists; pass -y (--overwrite) to replace it, or choose another name")
    }

    // MARK: - The folder

    /// The folder must exist and accept a new file.
    private static func checkFolder(of path: String, output: String) throws(MediaError) {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var info = stat()
        if stat(folder, &info) != 0 {
            let reason: String
            switch errno {
            case ENOENT: reason = "the folder '\(folder)' does not exist; create it first or choose another folder"
            case ENOTDIR: reason = "'\(folder)' is not a folder (part of that path is a file); choose another folder"
            case EACCES: reason = "the folder '\(folder)' cannot be reached: permission denied; choose another folder"
            default: reason = "the folder '\(folder)' cannot be reached (\(describe(errno))); choose another folder"
            }
            throw MediaError(.writeFailed, "cannot write '\(output)': \(reason)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw MediaError(.writeFailed, "cannot write '\(output)': '\(folder)' is not a folder; choose another folder")
        }
        // access(2) is not asked: NFS (root squash), read-only bind mounts and /proc answer it
        // wrongly. Creating a file is the question that matters.
        for _ in 0..<4 {
            let probe = folder + (folder.hasSuffix("/") ? "" : "/")
                + ".splice-probe-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
            let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                close(fd)
                unlink(probe)
                return
            }
            let code = errno
            if code == EEXIST { continue }  // another probe's name; draw again
            let reason: String
            switch code {
            case EACCES, EPERM:
                reason = "permission denied; choose a folder you can write to, or change its permissions"
            case EROFS: reason = "it is on a read-only file system; choose another folder"
            case ENOSPC, EDQUOT: reason = "no space or quota left there; free some space or choose another folder"
            case ENOENT: reason = "it does not accept new files; choose another folder"
            default: reason = "\(describe(code)); choose another folder"
            }
            throw MediaError(.writeFailed, "cannot write '\(output)': cannot create files in the folder '\(folder)': \(reason)")
        }
        throw MediaError(.writeFailed, "cannot write '\(output)': cannot create a file in the folder '\(folder)'")
    }

    // MARK: - The final move

    /// Moves the finished `temporary` file (beside `destination`, so on the same file system) to
    /// `destination`. With `replacing` false the move fails, leaving both files as they are, if a
    /// file is already there: `renameat2(RENAME_NOREPLACE)`; on file systems that cannot do that,
    /// a hard link (which fails the same way) then removing the temporary name; on file systems
    /// without hard links either, a check just before a plain rename.
    static func moveIntoPlace(_ temporary: String, to destination: String, replacing: Bool) throws(MediaError) {
        if replacing {
            guard rename(temporary, destination) == 0 else { throw moveFailed(destination, errno) }
            return
        }
        if splice_rename_noreplace(temporary, destination) == 0 { return }
        var code = errno
        if code == EINVAL || code == ENOSYS || code == EOPNOTSUPP {
            if link(temporary, destination) == 0 {
                unlink(temporary)
                return
            }
            code = errno
            if code == EPERM || code == EOPNOTSUPP || code == EXDEV || code == EMLINK {
                var entry = stat()
                if lstat(destination, &entry) == 0 {
                    code = EEXIST
                } else if rename(temporary, destination) == 0 {
                    return
                } else {
                    code = errno
                }
            }
        }
        if code == EEXIST {
            throw MediaError(.outputExists, "'\(destination)' appeared while Splice was writing it; it was left as it "
                             + "is and the new output discarded; pass -y (--overwrite) to replace it, or choose another name")
        }
        throw moveFailed(destination, code)
    }

    private static func moveFailed(_ destination: String, _ code: Int32) -> MediaError {
        MediaError(.writeFailed, "cannot move the finished output to '\(destination)': \(describe(code))")
    }

    // MARK: - Paths

    /// `path` made absolute against the current directory (symbolic links are left for stat).
    private static func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        let cwd = FileManager.default.currentDirectoryPath
        return cwd + (cwd.hasSuffix("/") ? "" : "/") + path
    }

    /// The local path of an input, or nil for a URL libavformat fetches itself.
    private static func localPath(_ input: String) -> String? {
        guard !input.isEmpty else { return nil }
        if input.hasPrefix("file://") {
            return URL(string: input)?.path
        }
        return input.contains("://") ? nil : input
    }

    private static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
