import CropGeometry

/// An EXIF orientation (1–8): how the stored pixels must be turned to display upright.
///
/// The crop math works on the oriented (displayed) image; the renderer crops in the stored
/// orientation and turns only the crop. `storedSquare` maps a square from displayed to stored
/// coordinates; `rotation` then `flipsHorizontally` turn a stored crop upright (the same steps as
/// libvips' autorot: rotate clockwise first, then mirror left-right).
struct Orientation: Hashable, Sendable {
    /// 1–8.
    let rawValue: Int

    /// Values outside 1–8 (including the 0 some cameras write) mean "as stored".
    init(exif value: Int) {
        rawValue = (1...8).contains(value) ? value : 1
    }

    static let upright = Orientation(exif: 1)

    enum Rotation: Int, Sendable {
        case none = 0
        case clockwise90 = 90
        case clockwise180 = 180
        case clockwise270 = 270
    }

    /// Orientations 5–8 swap width and height.
    var swapsAxes: Bool { rawValue >= 5 }

    /// The clockwise rotation applied first when turning stored pixels upright.
    var rotation: Rotation {
        switch rawValue {
        case 3, 4: .clockwise180
        case 5, 6: .clockwise90
        case 7, 8: .clockwise270
        default: .none
        }
    }

    /// Whether a left-right mirror follows the rotation.
    var flipsHorizontally: Bool { [2, 4, 5, 7].contains(rawValue) }

    func orientedSize(of stored: PixelSize) -> PixelSize {
        swapsAxes ? PixelSize(width: stored.height, height: stored.width) : stored
    }

    func storedSize(of oriented: PixelSize) -> PixelSize {
        swapsAxes ? PixelSize(width: oriented.height, height: oriented.width) : oriented
    }

    /// The stored-orientation square covering the same pixels as `square` in the displayed image.
    /// `stored` is the stored image's size (any unit, e.g. shrunk pixels, as long as it matches).
    func storedSquare(_ square: CropSquare, stored: (width: Double, height: Double)) -> CropSquare {
        let (x, y, side) = (square.x, square.y, square.side)
        let (w, h) = stored
        switch rawValue {
        case 2: return CropSquare(x: w - x - side, y: y, side: side)
        case 3: return CropSquare(x: w - x - side, y: h - y - side, side: side)
        case 4: return CropSquare(x: x, y: h - y - side, side: side)
        case 5: return CropSquare(x: y, y: x, side: side)
        case 6: return CropSquare(x: y, y: h - x - side, side: side)
        case 7: return CropSquare(x: w - y - side, y: h - x - side, side: side)
        case 8: return CropSquare(x: w - y - side, y: x, side: side)
        default: return square
        }
    }

    /// The same mapping for whole pixels: exact, so a crop inside the image stays inside.
    func storedCrop(_ crop: PixelCrop, stored: PixelSize) -> PixelCrop {
        let square = storedSquare(
            CropSquare(x: Double(crop.x), y: Double(crop.y), side: Double(crop.side)),
            stored: (Double(stored.width), Double(stored.height)))
        return PixelCrop(x: Int(square.x), y: Int(square.y), side: crop.side)
    }
}

extension Orientation {
    /// One step of a HEIF image's transformations (`irot`, `imir`), applied to what is displayed so far.
    enum Step {
        /// `irot`: a quarter turn anticlockwise.
        case anticlockwise90
        /// `imir` reversing each row.
        case mirrorLeftRight
        /// `imir` reversing the order of the rows.
        case mirrorTopBottom
    }

    /// The orientation that turns stored pixels upright by this one and then `step`.
    ///
    /// An orientation is "rotate clockwise by `rotation`, then mirror left-right if `flipsHorizontally`"
    /// (R then F). A quarter turn anticlockwise after it is R(θ + 270), or with the mirror F·R(θ − 270)
    /// (a mirror reverses the sense of a turn); a left-right mirror toggles F; a top-bottom mirror is
    /// F·R(180), so it adds 180° and toggles F.
    func followed(by step: Step) -> Orientation {
        var degrees = rotation.rawValue
        var flips = flipsHorizontally
        switch step {
        case .anticlockwise90: degrees += flips ? 90 : 270
        case .mirrorLeftRight: flips.toggle()
        case .mirrorTopBottom:
            degrees += 180
            flips.toggle()
        }
        return Orientation(rotation: Rotation(rawValue: degrees % 360) ?? .none, flipsHorizontally: flips)
    }

    /// The EXIF value for a clockwise rotation followed by an optional left-right mirror.
    init(rotation: Rotation, flipsHorizontally: Bool) {
        let value: Int =
            switch (rotation, flipsHorizontally) {
            case (.none, false): 1
            case (.none, true): 2
            case (.clockwise180, false): 3
            case (.clockwise180, true): 4
            case (.clockwise90, true): 5
            case (.clockwise90, false): 6
            case (.clockwise270, true): 7
            case (.clockwise270, false): 8
            }
        self.init(exif: value)
    }
}
