import CropGeometry

/// The image sizes a HEIF/AVIF file declares in its ISOBMFF boxes (`meta` → `iprp` → `ipco` →
/// `ispe`), read before any decoder allocates: libheif sizes its planes from these numbers, so a
/// 1 KB file declaring 17000×17000 is judged here, by the pixel limit, not by an allocation.
///
/// The parser is defensive: every length is checked against its enclosing box, box counts are
/// bounded, and anything that does not add up is `malformed` (the renderer answers
/// `decodeFailed`: libheif would refuse such a file too).
struct HEIFContainer: Equatable {
    /// The primary item's `ispe` (before `irot`/`clap`, which do not change the pixel count libheif
    /// allocates).
    var primary: PixelSize
    /// The largest `ispe` of any item (tiles, alpha and depth planes, thumbnails): what the
    /// decoder may allocate, whichever item it decodes.
    var largest: PixelSize

    struct Malformed: Error, Equatable, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Most boxes a parse visits before giving up (real files have a few dozen; a grid image
    /// with its tiles a few hundred properties and associations at most).
    static let maxBoxes = 10_000

    /// Most entries (items) one `ipma` box may list. Every item also needs an `infe` box, so a real
    /// file stays far below the box limit; a header that repeats entries to grow the parse is
    /// refused instead (docs/ARCHITECTURE.md §7).
    static let maxEntriesPerAssociationBox = maxBoxes

    /// What a parse keeps is bounded whatever the file says: the box lists it walks (at most
    /// `maxBoxes` records), one size per `ispe` property, and for the primary item only the first
    /// size found: never a list that grows with `ipma` entries or associations. The rest is a scan
    /// over bytes the caller already holds, linear in the header's length.

    static func parse(_ bytes: UnsafeRawBufferPointer) throws(Malformed) -> HEIFContainer {
        var parser = Parser(view: ByteView(bytes))
        return try parser.parse()
    }

    static func parse(_ bytes: [UInt8]) throws(Malformed) -> HEIFContainer {
        try bytes.withUnsafeBytes { raw in Result { () throws(Malformed) in try parse(raw) } }.get()
    }

    /// A box: its type and the byte range of its payload (after the header).
    struct Box {
        var type: FourCC
        var payload: Range<Int>
    }

    private struct Parser {
        let view: ByteView
        var visited = 0

        mutating func parse() throws(Malformed) -> HEIFContainer {
            // Top level: only the boxes up to `meta` must be sound; what follows (usually `mdat`,
            // possibly truncated) is libheif's to judge.
            guard let meta = try firstTopLevelBox(FourCC("meta")) else { throw Malformed("no meta box") }
            let metaChildren = try children(in: try fullBoxPayload(meta))
            guard let pitm = metaChildren.first(where: { $0.type == FourCC("pitm") }) else {
                throw Malformed("no primary item (pitm)")
            }
            let primaryID = try primaryItem(pitm)
            guard let iprp = metaChildren.first(where: { $0.type == FourCC("iprp") }) else {
                throw Malformed("no item properties (iprp)")
            }
            let iprpChildren = try children(in: iprp.payload)
            guard let ipco = iprpChildren.first(where: { $0.type == FourCC("ipco") }) else {
                throw Malformed("no property container (ipco)")
            }
            let properties = try children(in: ipco.payload)
            var sizes: [Int: PixelSize] = [:]
            for (index, property) in properties.enumerated() where property.type == FourCC("ispe") {
                // Property indices are 1-based; 0 means "no property".
                sizes[index + 1] = try imageSpatialExtent(property)
            }
            // The first ispe associated with the primary item, in file order; later entries for
            // the same item (the spec allows one) are scanned for soundness but keep nothing.
            var primary: PixelSize?
            for ipma in iprpChildren where ipma.type == FourCC("ipma") {
                let found = try firstAssociation(ipma, item: primaryID) { sizes[$0] }
                if primary == nil { primary = found }
            }
            guard let primary else { throw Malformed("the primary item declares no size (ispe)") }
            let largest = sizes.values.max { $0.pixelCount < $1.pixelCount } ?? primary
            return HEIFContainer(primary: primary, largest: largest)
        }

        /// The first top-level box of `type`, after a leading `ftyp`.
        mutating func firstTopLevelBox(_ type: FourCC) throws(Malformed) -> Box? {
            var offset = 0
            var first = true
            while offset < view.count {
                let box = try box(at: offset, in: 0..<view.count)
                if first, box.type != FourCC("ftyp") { throw Malformed("the file does not start with ftyp") }
                if box.type == type { return box }
                first = false
                offset = box.payload.upperBound
            }
            return nil
        }

        /// The boxes that fill `range` exactly.
        mutating func children(in range: Range<Int>) throws(Malformed) -> [Box] {
            var boxes: [Box] = []
            var offset = range.lowerBound
            while offset < range.upperBound {
                let box = try box(at: offset, in: range)
                boxes.append(box)
                offset = box.payload.upperBound
            }
            return boxes
        }

        /// The box starting at `offset`, which must end inside `range`.
        mutating func box(at offset: Int, in range: Range<Int>) throws(Malformed) -> Box {
            visited += 1
            guard visited <= HEIFContainer.maxBoxes else {
                throw Malformed("more than \(HEIFContainer.maxBoxes) boxes")
            }
            guard let size32 = view.u32be(offset), let type = view.fourCC(offset + 4),
                offset + 8 <= range.upperBound
            else { throw Malformed("truncated box header at \(offset)") }
            var header = 8
            var size = size32
            if size32 == 1 {
                guard let large = view.u64be(offset + 8), offset + 16 <= range.upperBound else {
                    throw Malformed("truncated large box size at \(offset)")
                }
                header = 16
                size = large
            } else if size32 == 0 {
                // "To the end of the enclosing box/file."
                size = range.upperBound - offset
            }
            if type == FourCC("uuid") { header += 16 }
            guard size >= header, size <= range.upperBound - offset else {
                throw Malformed("box \(type) at \(offset) has size \(size) outside its parent")
            }
            return Box(type: type, payload: (offset + header)..<(offset + size))
        }

        /// The payload after a full box's version and flags.
        func fullBoxPayload(_ box: Box) throws(Malformed) -> Range<Int> {
            guard box.payload.count >= 4 else { throw Malformed("\(box.type) is shorter than its version") }
            return (box.payload.lowerBound + 4)..<box.payload.upperBound
        }

        func primaryItem(_ pitm: Box) throws(Malformed) -> Int {
            let start = pitm.payload.lowerBound
            let version = view.u8(start) ?? 0
            let id = version == 0 ? view.u16be(start + 4) : view.u32be(start + 4)
            let length = version == 0 ? 6 : 8
            guard let id, pitm.payload.count >= length else { throw Malformed("truncated pitm") }
            return id
        }

        func imageSpatialExtent(_ ispe: Box) throws(Malformed) -> PixelSize {
            let start = ispe.payload.lowerBound
            guard ispe.payload.count >= 12, let width = view.u32be(start + 4), let height = view.u32be(start + 8)
            else { throw Malformed("truncated ispe") }
            guard width > 0, height > 0 else { throw Malformed("ispe declares \(width)x\(height)") }
            return PixelSize(width: width, height: height)
        }

        /// The first of the properties `ipma` associates with `item` that `match` maps to a value.
        /// Every entry is checked against the payload; nothing is collected.
        func firstAssociation<Value>(_ ipma: Box, item: Int, match: (Int) -> Value?) throws(Malformed) -> Value? {
            let payload = ipma.payload
            guard payload.count >= 8, let version = view.u8(payload.lowerBound),
                let flags = view.u24be(payload.lowerBound + 1), let entryCount = view.u32be(payload.lowerBound + 4)
            else { throw Malformed("truncated ipma") }
            guard entryCount <= HEIFContainer.maxEntriesPerAssociationBox else {
                throw Malformed(
                    "ipma lists \(entryCount) items, more than \(HEIFContainer.maxEntriesPerAssociationBox)")
            }
            let idSize = version < 1 ? 2 : 4
            let associationSize = flags & 1 != 0 ? 2 : 1
            var offset = payload.lowerBound + 8
            var found: Value?
            for _ in 0..<entryCount {
                // Each entry takes at least idSize + 1 bytes, so a lying count runs out of payload here.
                guard offset + idSize + 1 <= payload.upperBound,
                    let id = idSize == 2 ? view.u16be(offset) : view.u32be(offset),
                    let count = view.u8(offset + idSize)
                else { throw Malformed("truncated ipma entry") }
                offset += idSize + 1
                let end = offset + Int(count) * associationSize
                guard end <= payload.upperBound else { throw Malformed("truncated ipma associations") }
                if id == item, found == nil {
                    for index in stride(from: offset, to: end, by: associationSize) {
                        let value =
                            associationSize == 2 ? (view.u16be(index) ?? 0) & 0x7FFF : Int(view.u8(index) ?? 0) & 0x7F
                        if value != 0, let matched = match(value) {
                            found = matched
                            break
                        }
                    }
                }
                offset = end
            }
            return found
        }
    }
}

extension PixelSize {
    /// `width × height`, saturating instead of overflowing (declared sizes are untrusted).
    var pixelCount: Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow || width < 0 || height < 0 ? Int.max : product
    }
}

extension ByteView {
    fileprivate func u24be(_ offset: Int) -> Int? {
        guard let high = u8(offset), let low = u16be(offset + 1) else { return nil }
        return Int(high) << 16 | low
    }
}
