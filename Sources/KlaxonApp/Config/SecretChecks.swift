import Foundation
import KlaxonCore
import KlaxonDelivery
import Yams

#if canImport(Glibc)
    import Glibc
#endif

/// What every secret in `klaxon.yaml` must be (chat, API and owner tokens, the site key, HMAC keys,
/// SMTP and database passwords, source keys, header values, secret URLs): present, of a sane size,
/// on one line. An empty one is the worst case: it would make `token=` (or an HMAC with an empty key)
/// a valid credential. Messages name the key, the variable or the file, never the value.
extension ConfigReader {
    /// The longest secret: real tokens and keys are tens of bytes; 4 KiB is room for any of them.
    static let maxSecretBytes = 4 << 10
    /// A URL kept as a secret (a webhook's, a source's) may carry a long path and query.
    static let maxSecretURLBytes = 8 << 10

    /// `value` as a secret, or nil with an error at `node`. `label` names it (`chat.mattermost: token`,
    /// `… token_file: PATH`); `viaEnvironment` adds a hint when a `${NAME}` gave it.
    func checkedSecret(_ value: String, node: Node, key: String, label: String, viaEnvironment: Bool = false)
        -> Secret?
    {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        let limit = key == "url" ? Self.maxSecretURLBytes : Self.maxSecretBytes
        if trimmed.isEmpty {
            let hint = viaEnvironment ? " (an environment variable that is set but empty?)" : ""
            file.error(node, "\(label) is empty or only whitespace\(hint): a secret must have a value")
            return nil
        }
        if value.utf8.count > limit {
            file.error(node, "\(label) is longer than \(limit) bytes: that is not a token or key")
            return nil
        }
        // A line break or escape inside a secret breaks the headers it is sent in (or smuggles one).
        if let s = value.unicodeScalars.first(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            let what = s == "\n" || s == "\r" ? "a line break" : "a control character"
            file.error(node, "\(label) contains \(what): a secret is one line of text")
            return nil
        }
        return Secret(value)
    }

    /// Checks who may change or read a `*_file` secret: an error when anyone may write to it (or
    /// replace it: a folder anyone may write to, without the sticky bit); a warning when anyone may
    /// read it. Only a warning, because Kubernetes mounts secret volumes as symlinks to files of mode
    /// 0644 by default: refusing them would break real deployments that are safe in their pod.
    func checkSecretFile(_ path: String, node: Node, label: String) -> Bool {
        var link = stat()
        guard lstat(path, &link) == 0 else { return true }  // the read says why it cannot be read
        let isLink = (link.st_mode & 0o170000) == 0o120000  // S_IFMT, S_IFLNK
        var target = stat()
        guard stat(path, &target) == 0 else { return true }
        var folders = [(path as NSString).deletingLastPathComponent]
        if isLink, let real = realpath(path, nil) {
            folders.append((String(cString: real) as NSString).deletingLastPathComponent)
            free(real)
        }
        if target.st_mode & 0o002 != 0 {  // S_IWOTH
            file.error(
                node,
                "\(label): \(path)\(isLink ? " (a symlink)" : "") is writable by every user: anyone could change "
                    + "the secret; chmod 600 it (640 to share it with the daemon's group)")
            return false
        }
        for folder in Set(folders.map { $0.isEmpty ? "." : $0 }).sorted() {
            var dir = stat()
            if stat(folder, &dir) == 0, dir.st_mode & 0o002 != 0, dir.st_mode & 0o1000 == 0 {  // o+w, no sticky bit
                file.error(
                    node,
                    "\(label): \(path) is in \(folder), a folder every user may write to (without the sticky "
                        + "bit): anyone could replace the secret; keep it in a folder only its owner may write to")
                return false
            }
        }
        if target.st_mode & 0o004 != 0 {  // S_IROTH
            let mode = String(target.st_mode & 0o777, radix: 8)
            file.warn(
                node,
                "\(label): \(path) is \(isLink ? "a symlink to a file " : "")readable by every user (mode 0\(mode)): "
                    + "chmod 600 it (640 to share it with the daemon's group)")
        }
        return true
    }
}

extension Diagnostic {
    /// `PATH:LINE:COL: warning: message`: something that works but deserves a look.
    public var warningDescription: String { TerminalText.safe("\(path):\(line):\(column): warning: \(message)") }
}

extension YAMLFile {
    func warn(_ node: Node?, _ message: String) {
        let mark = node?.mark
        diagnostics.warn(Diagnostic(path: path, line: mark?.line ?? 1, column: mark?.column ?? 1, message: message))
    }
}
