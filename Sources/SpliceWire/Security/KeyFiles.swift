internal import Foundation
internal import Glibc

// Key files are text: `#` comment lines, then the key as 40 characters of Z85 on one line, so a
// public key file can be pasted into `splice workers enroll`. Secret key files are written with
// mode 0600 and refused when group or others can read them (as ssh does).

extension CurveKeyPair {
    /// Writes the secret key to `secretKeyPath` (mode 0600) and the public key to `publicKeyPath`
    /// (mode 0644). Each file is written to a temporary file beside it, synced and then moved into
    /// place, so a crash never leaves a half-written key. Existing files are kept, and the call
    /// fails, unless `overwrite` is true.
    public func save(secretKeyPath: String, publicKeyPath: String, overwrite: Bool = false) throws(WireError) {
        let secretText = """
            # Splice CURVE secret key. Keep it private (mode 0600): whoever holds it can act as this machine.
            # public key: \(publicKey.z85)
            \(secretKey.z85)

            """
        let publicText = """
            # Splice CURVE public key. Safe to share: enroll it on the coordinator, or give it to workers.
            \(publicKey.z85)

            """
        try KeyFile.write(secretText, to: secretKeyPath, mode: 0o600, overwrite: overwrite)
        try KeyFile.write(publicText, to: publicKeyPath, mode: 0o644, overwrite: overwrite)
    }

    /// `splice keys generate`: creates a fresh key pair and saves it (see `save`), creating the
    /// secret key's directory with mode 0700 if it does not exist yet.
    public static func generate(
        savingSecretKeyTo secretKeyPath: String, publicKeyTo publicKeyPath: String, overwrite: Bool = false
    ) throws(WireError) -> CurveKeyPair {
        for path in [secretKeyPath, publicKeyPath] {
            let directory = (path as NSString).deletingLastPathComponent
            guard !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) else { continue }
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
                )
            } catch {
                throw WireError(.keyFile, "cannot create directory \(directory) for key files: \(error)")
            }
        }
        let pair = try generate()
        try pair.save(secretKeyPath: secretKeyPath, publicKeyPath: publicKeyPath, overwrite: overwrite)
        return pair
    }

    /// Reads a secret key file written by `save` and derives its public key. Fails with
    /// `insecureKeyFile` when the file is readable by group or others.
    public static func load(secretKeyPath: String) throws(WireError) -> CurveKeyPair {
        var status = stat()
        guard stat(secretKeyPath, &status) == 0 else { throw KeyFile.systemError("read", secretKeyPath) }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw WireError(
                .insecureKeyFile, "secret key file \(secretKeyPath) is readable by others (mode \(String(mode, radix: 8))); "
                    + "run `chmod 600 \(secretKeyPath)`, or generate a new key pair if it may have leaked")
        }
        let text = try KeyFile.keyLine(secretKeyPath)
        do {
            return try CurveKeyPair(secretKey: CurveSecretKey(z85: text))
        } catch {
            throw WireError(.invalidKey, "\(secretKeyPath) does not hold a CURVE secret key")
        }
    }
}

extension CurvePublicKey {
    /// Reads a public key file written by `CurveKeyPair.save`.
    public static func load(path: String) throws(WireError) -> CurvePublicKey {
        let text = try KeyFile.keyLine(path)
        do {
            return try CurvePublicKey(z85: text)
        } catch {
            throw WireError(.invalidKey, "\(path) does not hold a CURVE public key")
        }
    }
}

enum KeyFile {
    static func systemError(_ verb: String, _ path: String, errno: Int32 = Glibc.errno) -> WireError {
        WireError(
            .keyFile, "cannot \(verb) key file \(path): \(String(cString: strerror(errno)))", errno: errno)
    }

    /// The first line that is neither blank nor a `#` comment.
    static func keyLine(_ path: String) throws(WireError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw systemError("read", path) }
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
        for line in lines {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if !trimmed.isEmpty && !trimmed.hasPrefix("#") { return trimmed }
        }
        throw WireError(.invalidKey, "key file \(path) holds no key")
    }

    /// Writes `text` to a temporary file in the destination's directory with exactly `mode`,
    /// fsyncs it, then links (no overwrite) or renames (overwrite) it into place and fsyncs the
    /// directory. The temporary file is removed on every failure path.
    static func write(_ text: String, to path: String, mode: mode_t, overwrite: Bool) throws(WireError) {
        let directory = (path as NSString).deletingLastPathComponent.isEmpty
            ? "." : (path as NSString).deletingLastPathComponent
        let temporary = "\(directory)/.\((path as NSString).lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw systemError("create", temporary) }
        var failure: WireError?
        // fchmod: the process umask may have narrowed `mode` (never widened: 0600 stays 0600).
        if fchmod(fd, mode) != 0 { failure = systemError("chmod", temporary) }
        if failure == nil {
            let bytes = Array(text.utf8)
            var written = 0
            while written < bytes.count {
                let rc = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if rc < 0 && errno == EINTR { continue }
                if rc <= 0 { failure = systemError("write", temporary); break }
                written += rc
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = systemError("sync", temporary) }
        close(fd)
        if failure == nil {
            if overwrite {
                if rename(temporary, path) != 0 { failure = systemError("replace", path) }
            } else if link(temporary, path) != 0 {
                failure = errno == EEXIST
                    ? WireError(.keyFile, "key file \(path) already exists; "
                        + "pass overwrite (--force) to replace it", errno: EEXIST)
                    : systemError("create", path)
            }
        }
        unlink(temporary)  // after link(): the key stays at `path`; after rename(): already gone
        if let failure { throw failure }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            fsync(directoryFD)
            close(directoryFD)
        }
    }
}
