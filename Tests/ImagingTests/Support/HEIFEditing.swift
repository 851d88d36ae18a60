/// Rewrites a real HEIF/AVIF file's boxes for the HEIF region decoder's tests: adds transformation
/// properties (`irot`, `imir`) to the primary item, so one small real photo stands for every stored
/// orientation without new coded pixels. Handles what our fixtures use: `meta` with `pitm`, `iloc`
/// (file offsets, construction method 0) and `iprp`; item data after `meta`.
enum HEIFEditing {
    enum Transform {
        /// Quarter turns anticlockwise.
        case rotate(Int)
        /// `imir` axis 0 (libheif reverses the rows) or 1 (it reverses each row).
        case mirror(axis: Int)
    }

    struct Unsupported: Error {}

    static func adding(_ transforms: [Transform], to bytes: [UInt8]) throws -> [UInt8] {
        guard !transforms.isEmpty else { return bytes }
        var file = bytes
        guard let meta = child("meta", in: file, from: 0, to: file.count) else { throw Unsupported() }
        let metaChildren = meta.payload + 4
        guard let pitm = child("pitm", in: file, from: metaChildren, to: meta.end),
            let iprp = child("iprp", in: file, from: metaChildren, to: meta.end),
            let ipco = child("ipco", in: file, from: iprp.payload, to: iprp.end),
            let ipma = child("ipma", in: file, from: iprp.payload, to: iprp.end)
        else { throw Unsupported() }
        let primary = file[pitm.payload] == 0 ? u16(file, pitm.payload + 4) : Int(u32(file, pitm.payload + 4))
        // New properties, appended to ipco: their indices follow the existing ones.
        var count = 0
        var offset = ipco.payload
        while offset < ipco.end {
            count += 1
            offset += Int(u32(file, offset))
        }
        let boxes: [[UInt8]] = transforms.map {
            switch $0 {
            case .rotate(let turns): ISOBMFFBuilder.box("irot", [UInt8(turns & 3)])
            case .mirror(let axis): ISOBMFFBuilder.box("imir", [UInt8(axis & 1)])
            }
        }
        let indices = (1...boxes.count).map { count + $0 }
        // The primary item's ipma entry gains the new indices (7-bit, not essential).
        let version = file[ipma.payload]
        let wide = file[ipma.payload + 3] & 1 != 0
        guard !wide, indices.allSatisfy({ $0 < 128 }) else { throw Unsupported() }
        let entries = Int(u32(file, ipma.payload + 4))
        var entry = ipma.payload + 8
        var inserted = false
        for _ in 0..<entries {
            let id = version < 1 ? u16(file, entry) : Int(u32(file, entry))
            let idSize = version < 1 ? 2 : 4
            let associations = Int(file[entry + idSize])
            if id == primary {
                file[entry + idSize] = UInt8(associations + indices.count)
                file.insert(contentsOf: indices.map { UInt8($0) }, at: entry + idSize + 1 + associations)
                inserted = true
                break
            }
            entry += idSize + 1 + associations
        }
        guard inserted else { throw Unsupported() }
        let added = boxes.flatMap { $0 }
        file.insert(contentsOf: added, at: ipco.end)
        let delta = added.count + indices.count
        grow(&file, at: ipma.start + (ipma.start > ipco.start ? added.count : 0), by: indices.count)
        grow(&file, at: ipco.start, by: added.count)
        grow(&file, at: iprp.start, by: delta)
        grow(&file, at: meta.start, by: delta)
        // Everything after meta moved: shift iloc's file offsets (iloc precedes or follows iprp).
        let newMetaEnd = meta.end + delta
        guard let iloc = child("iloc", in: file, from: metaChildren, to: newMetaEnd) else { throw Unsupported() }
        try shiftOffsets(&file, iloc: iloc, after: meta.end, by: delta)
        return file
    }

    // MARK: - Boxes

    struct Box {
        var start: Int
        var payload: Int
        var end: Int
    }

    static func u16(_ b: [UInt8], _ o: Int) -> Int { Int(b[o]) << 8 | Int(b[o + 1]) }
    static func u32(_ b: [UInt8], _ o: Int) -> UInt32 { (0..<4).reduce(0) { $0 << 8 | UInt32(b[o + $1]) } }

    static func child(_ type: String, in b: [UInt8], from: Int, to: Int) -> Box? {
        var offset = from
        while offset + 8 <= to {
            let size = Int(u32(b, offset))
            guard size >= 8 else { return nil }
            if String(decoding: b[(offset + 4)..<(offset + 8)], as: UTF8.self) == type {
                return Box(start: offset, payload: offset + 8, end: offset + size)
            }
            offset += size
        }
        return nil
    }

    static func grow(_ b: inout [UInt8], at start: Int, by delta: Int) {
        put(&b, start, UInt64(Int(u32(b, start)) + delta), size: 4)
    }

    static func read(_ b: [UInt8], _ o: Int, size: Int) -> UInt64 {
        (0..<size).reduce(0) { $0 << 8 | UInt64(b[o + $1]) }
    }

    static func put(_ b: inout [UInt8], _ o: Int, _ value: UInt64, size: Int) {
        for i in 0..<size { b[o + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(size - 1 - i))) }
    }

    static func shiftOffsets(_ b: inout [UInt8], iloc: Box, after: Int, by delta: Int) throws {
        let version = b[iloc.payload]
        var o = iloc.payload + 4
        let offsetSize = Int(b[o] >> 4)
        let lengthSize = Int(b[o] & 15)
        let baseSize = Int(b[o + 1] >> 4)
        let indexSize = version >= 1 ? Int(b[o + 1] & 15) : 0
        o += 2
        let items: Int
        if version < 2 {
            items = u16(b, o)
            o += 2
        } else {
            items = Int(u32(b, o))
            o += 4
        }
        for _ in 0..<items {
            o += version < 2 ? 2 : 4
            var method = 0
            if version >= 1 {
                method = u16(b, o) & 15
                o += 2
            }
            o += 2  // data reference index
            let baseOffset = baseSize > 0 ? read(b, o, size: baseSize) : 0
            let baseAt = o
            o += baseSize
            let extents = u16(b, o)
            o += 2
            var shiftedBase = false
            for _ in 0..<extents {
                o += indexSize
                if method == 0 {
                    if baseSize > 0, baseOffset > 0 {
                        if !shiftedBase, baseOffset >= UInt64(after) {
                            put(&b, baseAt, baseOffset + UInt64(delta), size: baseSize)
                            shiftedBase = true
                        }
                    } else if offsetSize > 0 {
                        let value = read(b, o, size: offsetSize)
                        if value >= UInt64(after) { put(&b, o, value + UInt64(delta), size: offsetSize) }
                    } else {
                        throw Unsupported()
                    }
                }
                o += offsetSize + lengthSize
            }
        }
    }
}
