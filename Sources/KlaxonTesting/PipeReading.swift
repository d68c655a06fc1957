import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension FileHandle {
    /// Everything until end of file, read with `read(2)` and retried when a signal interrupts it.
    /// Foundation's `readDataToEndOfFile()` and `availableData` stop the process on `EINTR` (a
    /// `try!` inside them): a soak's test process died so while another test's child exited.
    public func readAllRetrying() -> Data {
        var data = Data()
        while true {
            let chunk = readSomeRetrying()
            if chunk.isEmpty { return data }
            data.append(chunk)
        }
    }

    /// What one `read(2)` gives (empty at end of file or on an error other than `EINTR`), retried
    /// when a signal interrupts it: `availableData` without its `try!`.
    public func readSomeRetrying(upTo count: Int = 65_536) -> Data {
        var buffer = [UInt8](repeating: 0, count: count)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, count) }
            if n >= 0 { return Data(buffer[..<n]) }
            if errno != EINTR { return Data() }
        }
    }

    /// Writes all of `data` with `write(2)`, retried when a signal interrupts it (Foundation's
    /// `write(_:)` has the same `try!`); stops at another error (a reader that went away).
    public func writeAllRetrying(_ data: Data) {
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fileDescriptor, raw.baseAddress! + offset, raw.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
