import Foundation
import KlaxonCore

/// Reads readings files (CSV or JSON Lines) in fixed-size chunks, so memory does not grow with the file.
public enum ReadingsFiles {
    static let chunkSize = 1 << 20

    /// Streams every line's outcome. Throws when the file cannot be opened or read.
    public static func stream(
        path: String, format: ReadingsParser.Format? = nil, _ body: (ParsedRow) -> Void
    ) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            throw UserError("\(path): cannot read: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: chunkSize)
        defer { buffer.deallocate() }
        var parser: ReadingsParser? = format.map { ReadingsParser(format: $0) }
        while true {
            let n = read(fd, buffer.baseAddress, chunkSize)
            if n < 0 {
                if errno == EINTR { continue }
                throw UserError("\(path): cannot read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            if parser == nil {
                let first = UnsafeBufferPointer(rebasing: buffer[0..<n]).first { $0 > 0x20 }
                parser = ReadingsParser(format: .guess(path: path, firstByte: first))
            }
            parser!.feed(UnsafeBufferPointer(rebasing: buffer[0..<n]), body)
        }
        parser?.finish(body)
    }
}

/// Writes to standard error (unbuffered, so it interleaves sensibly with progress).
public func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
