/// A C struct's fixed-size, NUL-terminated message buffer (a `char[N]`, imported as a tuple) as a String: how
/// the region decoders' C modules (`CJPEGRegion`, `CHEIFRegion`) hand back their error messages.
func cMessage<T>(_ buffer: inout T) -> String {
    withUnsafeBytes(of: &buffer) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
}
