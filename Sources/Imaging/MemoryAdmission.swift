import CropGeometry

/// Bytes one render is expected to need, on each path.
public struct MemoryEstimate: Sendable, Hashable, Codable {
    public var fullResolution: Int
    public var fallback: Int

    public init(fullResolution: Int, fallback: Int) {
        self.fullResolution = fullResolution
        self.fallback = fallback
    }
}

/// What a job may do given the memory budget.
public enum AdmissionDecision: Sendable, Equatable {
    case fullResolution(reserve: Int)
    case fallback(reserve: Int)
    case wait
}

/// docs/ARCHITECTURE.md §2, "Memory": estimates from the header alone, before any decode.
///
/// The estimates are deliberately conservative approximations of each decoder's behaviour. The
/// JPEG region decoder (`DecoderSelection`) holds the crop's square at the decode scale, plus
/// libjpeg's few rows; the HEIF region decoder the crop's square box-shrunk alike plus the tiles its
/// threads hold (or the whole coded image, when it is not a grid); through libvips a baseline JPEG, non-interlaced PNG or TIFF streams in strips
/// (memory ∝ decoded width), while progressive JPEG (coefficient buffer), interlaced PNG, WebP, HEIF
/// and GIF decoders hold whole frames. Only JPEG and WebP can decode smaller, so only they get a
/// cheaper fallback (HEIF's is its thumbnail item, on the region decoder).
public enum MemoryAdmission {
    /// Fixed cost of a render beyond its buffers (libvips objects, thread stacks, encoder state).
    static let overhead = 16 * 1024 * 1024
    /// Rows of the decoded image libvips' sequential line cache may hold.
    static let sequentialRows = 256
    /// Rows per libvips pipeline thread in flight, in float (resize works in float).
    static let pipelineRows = 64

    /// `input` nil means "any pose": the estimate then assumes the most zoomed-in crop (the least
    /// shrink-on-load), so it holds whatever pose arrives.
    public static func estimate(header: ImageHeader, options: RenderOptions, input: CropInput? = nil)
        -> MemoryEstimate
    {
        estimate(header: header, options: options, input: input, threads: max(1, Vips.concurrency))
    }

    static func estimate(header: ImageHeader, options: RenderOptions, input: CropInput?, threads: Int)
        -> MemoryEstimate
    {
        let cropSide = cropSide(header: header, options: options, input: input)
        let master = options.masterSize
        let fullFactor = ShrinkOnLoad.factor(format: header.format, cropSide: cropSide, required: master)
        let fallbackFactor = ShrinkOnLoad.fallbackFactor(
            format: header.format, stored: header.storedSize, longEdge: options.fallbackLongEdge,
            fullFactor: fullFactor)
        var fallbackDecode = ShrinkOnLoad.decodedSize(header.storedSize, factor: fallbackFactor)
        if header.format == .webp {
            let scale = ShrinkOnLoad.fallbackWebPScale(
                stored: header.storedSize, longEdge: options.fallbackLongEdge, fullFactor: fullFactor)
            fallbackDecode = PixelSize(
                width: max(1, Int((Double(header.storedSize.width) * scale).rounded())),
                height: max(1, Int((Double(header.storedSize.height) * scale).rounded())))
        }
        var full = bytes(
            header: header, decoded: ShrinkOnLoad.decodedSize(header.storedSize, factor: fullFactor),
            cropSide: cropSide, options: options, threads: threads)
        var fallback = bytes(
            header: header, decoded: fallbackDecode, cropSide: cropSide, options: options, threads: threads)

        // Which decoder the render picks for a square of `side` decoded pixels: `DecoderSelection` decides, here as
        // in the render; side 0 asks whether the file and the options allow the region decoder at all.
        let decoder = { (side: Int) in DecoderSelection.decoder(for: header, options: options, regionSide: side) }
        if decoder(0) == .jpegRegion {
            // The region's side at each path's scale: the planned crop's, or for any pose the largest a
            // pose can produce (`regionSideBound`).
            let fullSide: Int
            let fallbackSide: Int
            if input != nil {
                fullSide = Int((cropSide / Double(fullFactor)).rounded(.up))
                fallbackSide = Int((cropSide / Double(fallbackFactor)).rounded(.up))
            } else {
                fullSide = regionSideBound(header: header, master: master)
                let shortSide = Double(min(header.storedSize.width, header.storedSize.height))
                fallbackSide = min(fullSide, Int((shortSide / Double(fallbackFactor)).rounded(.up)))
            }
            let regionFull = regionBytes(
                header: header, factor: fullFactor, regionSide: fullSide, options: options, threads: threads)
            let regionFallback = regionBytes(
                header: header, factor: fallbackFactor, regionSide: fallbackSide, options: options, threads: threads)
            let fits = { (side: Int) in decoder(side) == .jpegRegion }
            if input != nil {
                // The render makes the same choice on the same square.
                if fits(fullSide) { full = regionFull }
                if fits(fallbackSide) { fallback = regionFallback }
            } else {
                // Any pose: whichever decoder it ends up on.
                full = fits(fullSide) ? regionFull : max(full, regionFull)
                fallback = fits(fallbackSide) ? regionFallback : max(fallback, regionFallback)
            }
        }
        if decoder(0) == .heifRegion, let layout = header.heifLayout {
            (full, fallback) = heifRegionEstimate(
                header: header, layout: layout, options: options, input: input, cropSide: cropSide, threads: threads)
        }
        if let input, options.findsFaces(for: input) {
            // A no-pose job looking for faces holds the whole image at the centred square's scale (`FaceFrame`).
            full += FaceFrame.extraBytes(header: header, options: options)
        }
        let encoding = encoderBytes(options: options)
        return MemoryEstimate(fullResolution: full + encoding, fallback: min(fallback, full) + encoding)
    }

    /// aom's working memory per pixel of an AVIF it encodes (one thread, speed 8: VmPeak grew by 28–29 bytes per
    /// pixel from 512² to 2048²); also taken for libwebp, whose planes and token buffers take less.
    static let lossyEncoderBytesPerPixel = 32

    /// The largest WebP or AVIF encode of the job (the encodes run one at a time); zero for PNG and JPEG only, whose
    /// encoders stream rows.
    static func encoderBytes(options: RenderOptions) -> Int {
        let lossy: Set<AvatarFormat> = [.webp, .avif]
        let sides =
            (lossy.isDisjoint(with: options.formats.avatar) ? [] : [options.settings.outputSize])
            + (lossy.isDisjoint(with: options.formats.extras) ? [] : options.extraSizes)
        guard let side = sides.max() else { return 0 }
        return side * side * lossyEncoderBytesPerPixel
    }

    /// The HEIF region decoder: the crop's square box-shrunk by the render's factor (for any pose the
    /// largest a pose can make, `regionSideBound`), and on the fallback the thumbnail item when the
    /// render would use it (else the same tiles at the same factor).
    static func heifRegionEstimate(
        header: ImageHeader, layout: HEIFRegionDecoder.Layout, options: RenderOptions, input: CropInput?,
        cropSide: Double, threads: Int
    ) -> (full: Int, fallback: Int) {
        let shortSide = min(layout.storedSize.width, layout.storedSize.height)
        let factor: Int
        let side: Int
        if input != nil {
            factor = ShrinkOnLoad.factor(format: .heif, cropSide: cropSide, required: options.masterSize)
            side = min(shortSide, Int(cropSide.rounded(.up))) / factor
        } else {
            // Any pose: below the top factor the square is under 2 × master, at it up to the short side / 8;
            // the box sums are largest at factor 2.
            factor = 2
            side = min(shortSide, regionSideBound(header: header, master: options.masterSize))
        }
        let full = heifRegionBytes(
            header: header, layout: layout, regionSide: side, factor: factor, threads: threads, options: options)
        guard let input, let thumbnail = layout.thumbnailSize,
            let plan = try? CropGeometry.plan(source: header.orientedSize, input: input, settings: options.settings),
            let crop = HEIFRegionDecoder.thumbnailCrop(layout: layout, plan: plan, minSide: options.masterSize)
        else { return (full, full) }
        var small = layout
        (small.storedSize, small.columns, small.rows, small.tileSize) = (thumbnail, 1, 1, thumbnail)
        let fallback = heifRegionBytes(
            header: header, layout: small, regionSide: crop.crop.side, factor: 1, threads: threads, options: options)
        return (full, fallback)
    }

    /// The HEIF region decoder: the input copy; what libheif holds for each coded image it decodes
    /// at once — grid tiles, or a non-grid image whole — as YCbCr planes (4:4:4 at worst) plus the
    /// interleaved RGB(A) it converts them to, and for a non-grid image the decoder's own buffers too (dav1d's
    /// 4:2:0 picture, 1.5 samples a pixel, and on two decode cores a coefficient buffer of 3); the region
    /// (`regionSide`, box-shrunk by `factor`), held whole, and while shrinking the 32-bit box sums of one tile
    /// row's output rows; the resize reading it; the squares.
    static func heifRegionBytes(
        header: ImageHeader, layout: HEIFRegionDecoder.Layout, regionSide: Int, factor: Int, threads: Int,
        options: RenderOptions
    ) -> Int {
        let sample = layout.bitDepth > 8 ? 2 : 1
        let bands = layout.hasAlpha ? 4 : 3
        // A grid's tiles decoded at once: the render's thread and the process's extra ones (`DecodeCores`) decode
        // one each, and decoded tiles wait their turn to be copied.
        let tilesAtOnce = layout.isGrid ? DecodeCores.tilesHeldPerDecode : 1
        let decoder = layout.isGrid ? 0 : layout.tileSize.pixelCount * sample * 9 / 2
        let unit = layout.tileSize.pixelCount * sample * (3 + bands) * tilesAtOnce + decoder
        let region = regionSide * regionSide * bands * sample
        let sums = factor > 1 ? min(regionSide, layout.tileSize.height / factor + 2) * regionSide * bands * 4 : 0
        let pipeline = threads * regionSide * 4 * 4 * pipelineRows
        return overhead + header.byteCount + unit + region + sums + pipeline + squareBytes(options)
    }

    /// Full resolution if it fits next to what is reserved; else the fallback if that fits; else
    /// wait. With nothing reserved a job always runs (on the fallback when the full path does not
    /// fit), so a job larger than the whole budget cannot wait forever.
    public static func decide(estimate: MemoryEstimate, budget: Int, reserved: Int) -> AdmissionDecision {
        let available = budget - reserved
        if estimate.fullResolution <= available { return .fullResolution(reserve: estimate.fullResolution) }
        if estimate.fallback <= available || reserved <= 0 { return .fallback(reserve: estimate.fallback) }
        return .wait
    }

    // MARK: - Parts

    /// The crop side in source pixels: the planned one, or the smallest any pose can produce.
    static func cropSide(header: ImageHeader, options: RenderOptions, input: CropInput?) -> Double {
        let shortSide = Double(min(header.orientedSize.width, header.orientedSize.height))
        if let input,
            let plan = try? CropGeometry.plan(
                source: header.orientedSize, input: input, settings: options.settings)
        {
            return Double(plan.pixelCrop.side)
        }
        guard let bounds = try? CropGeometry.bounds(source: header.orientedSize, settings: options.settings)
        else { return shortSide }
        let settings = options.settings
        return min(shortSide, settings.maskDiameter * settings.screenScale / bounds.sMax)
    }

    /// The largest region (side, in decoded pixels) any pose can make the region decoder hold: shrink-on-
    /// load picks the largest factor `f` with `crop / f ≥ master`, so below the top factor the region
    /// is at most `2 × master` (`crop / 2f < master`); at the top factor (1/8) it is up to the short
    /// side / 8; never more than the short side.
    static func regionSideBound(header: ImageHeader, master: Int) -> Int {
        let shortSide = min(header.storedSize.width, header.storedSize.height)
        let top = ShrinkOnLoad.factors.max() ?? 1
        return min(shortSide, max(2 * master, (shortSide + top - 1) / top))
    }

    /// The JPEG region decoder: the input copy; libjpeg's sample rows, which span the whole scaled
    /// width (libjpeg allocates them before the column crop; an iMCU row group of every component
    /// with its context rows); the region, held whole; the resize reading it; the squares.
    static func regionBytes(header: ImageHeader, factor: Int, regionSide: Int, options: RenderOptions, threads: Int)
        -> Int
    {
        let scaled = ShrinkOnLoad.decodedSize(header.storedSize, factor: factor)
        let bands = header.bands == 1 ? 1 : 3
        let decoder = scaled.width * 3 * 16
        let region = regionSide * regionSide * bands
        let pipeline = threads * regionSide * 4 * 4 * pipelineRows
        return overhead + header.byteCount + decoder + region + pipeline + squareBytes(options)
    }

    static func squareBytes(_ options: RenderOptions) -> Int {
        ([options.masterSize, options.settings.outputSize] + options.extraSizes).map { $0 * $0 * 3 * 2 }.reduce(0, +)
    }

    static func bytes(header: ImageHeader, decoded: PixelSize, cropSide: Double, options: RenderOptions, threads: Int)
        -> Int
    {
        let stored = header.storedSize
        let storedPixels = stored.width * stored.height
        let bands = max(1, header.bands)
        let sample = max(1, header.bitDepth / 8)
        let row = decoded.width * bands * sample

        let decoder: Int
        switch header.format {
        case .jpeg:
            // Progressive JPEG keeps every DCT coefficient (2 bytes) of the full image.
            decoder = header.interlaced ? storedPixels * bands * 2 : row * 16
        case .png:
            decoder = header.interlaced ? storedPixels * bands * sample : row * 2
        case .webp:
            decoder = decoded.width * decoded.height * max(bands, 3)
        case .heif:
            // libheif's decoded planes plus the interleaved copy libvips reads.
            decoder = storedPixels * (bands * sample * 2 + 2)
        case .gif:
            // The frame and the previous frame, always RGBA.
            decoder = storedPixels * 4 * 2
        case .tiff:
            decoder = row * 512
        }
        let window = row * sequentialRows
        let shrink = Double(decoded.width) / Double(max(1, stored.width))
        let cropDecoded = Int((cropSide * shrink).rounded(.up))
        let pipeline = threads * cropDecoded * 4 * 4 * pipelineRows
        // The renderer keeps its own copy of the encoded bytes for libvips' buffer loader.
        return overhead + header.byteCount + decoder + window + pipeline + squareBytes(options)
    }
}
