extension HTTPRequestHead {
    /// The head as a client sends it: the request line, each field on its own line, and
    /// the empty line that ends the head.
    ///
    /// Parsing the result gives this head back (the parser's fuzz check relies on it).
    public func serialized() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + headers.fields.count * 32)
        bytes += method.utf8
        bytes.append(0x20)
        bytes += target.utf8
        bytes += " HTTP/1.\(minorVersion)\r\n".utf8
        for field in headers {
            bytes += field.name.utf8
            bytes += ": ".utf8
            // Values hold one scalar per byte (ISO-8859-1): write the bytes back.
            for scalar in field.value.unicodeScalars { bytes.append(UInt8(truncatingIfNeeded: scalar.value)) }
            bytes += "\r\n".utf8
        }
        bytes += "\r\n".utf8
        return bytes
    }
}
