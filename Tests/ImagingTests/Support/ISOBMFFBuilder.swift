/// Builds ISOBMFF (HEIF/AVIF) byte layouts for the container tests: boxes, full boxes, and a
/// minimal still-image file (`ftyp`, then `meta` with `hdlr`, `pitm`, `iprp`/`ipco`/`ipma`).
enum ISOBMFFBuilder {
    static func be16(_ value: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    static func be32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(UInt32(8 + payload.count)) + Array(type.utf8) + payload
    }

    static func fullBox(_ type: String, version: UInt8 = 0, flags: UInt32 = 0, _ payload: [UInt8]) -> [UInt8] {
        box(type, [version] + Array(be32(flags).suffix(3)) + payload)
    }

    static func ftyp(_ brand: String, compatible: [String] = []) -> [UInt8] {
        box("ftyp", Array(brand.utf8) + [0, 0, 0, 0] + compatible.flatMap { Array($0.utf8) })
    }

    static func ispe(_ width: UInt32, _ height: UInt32) -> [UInt8] {
        fullBox("ispe", be32(width) + be32(height))
    }

    static func pitm(_ item: Int, version: UInt8 = 0) -> [UInt8] {
        fullBox("pitm", version: version, version == 0 ? be16(item) : be32(UInt32(item)))
    }

    /// `associations`: item id → 1-based property indices.
    static func ipma(_ associations: [(item: Int, properties: [Int])], version: UInt8 = 0, wide: Bool = false)
        -> [UInt8]
    {
        var payload = be32(UInt32(associations.count))
        for (item, properties) in associations {
            payload += version == 0 ? be16(item) : be32(UInt32(item))
            payload.append(UInt8(properties.count))
            for property in properties {
                payload += wide ? be16(property) : [UInt8(property)]
            }
        }
        return fullBox("ipma", version: version, flags: wide ? 1 : 0, payload)
    }

    /// A still image: `properties` are the `ipco` children in order (index 1, 2, …).
    static func file(
        brand: String = "avif", primary: Int = 1, pitmVersion: UInt8 = 0, properties: [[UInt8]],
        associations: [(item: Int, properties: [Int])], ipmaVersion: UInt8 = 0, wide: Bool = false,
        trailing: [UInt8] = box("mdat", [0, 0, 0, 0])
    ) -> [UInt8] {
        let hdlr = fullBox("hdlr", [0, 0, 0, 0] + Array("pict".utf8) + Array(repeating: 0, count: 13))
        let iprp = box(
            "iprp",
            box("ipco", properties.flatMap { $0 }) + ipma(associations, version: ipmaVersion, wide: wide))
        let meta = fullBox("meta", hdlr + pitm(primary, version: pitmVersion) + iprp)
        return ftyp(brand, compatible: [brand, "mif1", "miaf"]) + meta + trailing
    }
}
