import COspreyCodecShims

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One scale of a reference: its XYB planes, their blurred means and their blurred squares.
struct PreparedScale: Sendable {
    let xyb: Planes
    let means: Planes
    let squares: Planes

    init(_ xyb: Planes) {
        self.xyb = xyb
        let (width, height, count) = (xyb.width, xyb.height, xyb.planeCount)
        let means = Planes(width: width, height: height)
        let squares = Planes(width: width, height: height)
        let blur = StreamingBlur(width: width, height: height, inputs: 2)
        xyb.values.withUnsafeBufferPointer { xyb in
            means.values.withUnsafeMutableBufferPointer { means in
                squares.values.withUnsafeMutableBufferPointer { squares in
                    for plane in 0..<3 {
                        let a = xyb.baseAddress! + plane * count
                        blur.run { row, input, target in
                            let source = a + row * width
                            if input == 0 {
                                target.update(from: source, count: width)
                            } else {
                                osprey_quality_multiply(source, source, UInt32(width), target)
                            }
                        } destination: { [means = means.baseAddress!, squares = squares.baseAddress!] y, input in
                            (input == 0 ? means : squares) + plane * count + y * width
                        }
                    }
                }
            }
        }
        self.means = means
        self.squares = squares
    }

    /// The error maps' norms of `distorted` (XYB planes of this scale's size) against this reference.
    func compare(_ distorted: Planes) -> ScaleNorms {
        let (width, height, count) = (xyb.width, xyb.height, xyb.planeCount)
        precondition(distorted.width == width && distorted.height == height)
        var norms = ScaleNorms()
        // Blurred: the distorted plane, its square and its product with the reference.
        let blur = StreamingBlur(width: width, height: height, inputs: 3)
        let onePerPixel = 1 / Double(count)
        xyb.values.withUnsafeBufferPointer { reference in
            distorted.values.withUnsafeBufferPointer { distorted in
                means.values.withUnsafeBufferPointer { means in
                    squares.values.withUnsafeBufferPointer { squares in
                        for plane in 0..<3 {
                            let a = reference.baseAddress! + plane * count
                            let b = distorted.baseAddress! + plane * count
                            // The SSIM error, ringing and blurring, each summed and summed to the fourth power.
                            var sums = [Double](repeating: 0, count: 6)
                            blur.run { row, input, target in
                                let (rowA, rowB) = (a + row * width, b + row * width)
                                switch input {
                                case 0: target.update(from: rowB, count: width)
                                case 1: osprey_quality_multiply(rowB, rowB, UInt32(width), target)
                                default: osprey_quality_multiply(rowA, rowB, UInt32(width), target)
                                }
                            } body: { y, blurred in
                                let offset = plane * count + y * width
                                osprey_quality_error_sums(
                                    a + y * width, b + y * width, means.baseAddress! + offset, blurred,
                                    squares.baseAddress! + offset, blurred + width, blurred + 2 * width,
                                    UInt32(width), &sums)
                            }
                            func root4(_ value: Double) -> Double { value.squareRoot().squareRoot() }
                            norms.ssim[2 * plane] = onePerPixel * sums[0]
                            norms.ssim[2 * plane + 1] = root4(onePerPixel * sums[1])
                            norms.edge[4 * plane] = onePerPixel * sums[2]
                            norms.edge[4 * plane + 1] = root4(onePerPixel * sums[3])
                            norms.edge[4 * plane + 2] = onePerPixel * sums[4]
                            norms.edge[4 * plane + 3] = root4(onePerPixel * sums[5])
                        }
                    }
                }
            }
        }
        return norms
    }
}

/// The 18 norms of one scale: for X, Y and B, SSIM's 1- and 4-norm, then ringing's and blurring's.
struct ScaleNorms {
    var ssim = [Double](repeating: 0, count: 6)
    var edge = [Double](repeating: 0, count: 12)
}

extension ImageQuality {
    /// libjxl's 108 weights (SSIMULACRA 2.1), in the order channel, scale, norm, map.
    static let weights: [Double] = [
        0.0, 0.0007376606707406586, 0.0, 0.0, 0.0007793481682867309, 0.0, 0.0, 0.0004371155730107379, 0.0,
        1.1041726426657346, 0.00066284834129271, 0.00015231632783718752, 0.0, 0.0016406437456599754, 0.0,
        1.8422455520539298, 11.441172603757666, 0.0, 0.0007989109436015163, 0.000176816438078653, 0.0,
        1.8787594979546387, 10.94906990605142, 0.0, 0.0007289346991508072, 0.9677937080626833, 0.0,
        0.00014003424285435884, 0.9981766977854967, 0.00031949755934435053, 0.0004550992113792063, 0.0, 0.0,
        0.0013648766163243398, 0.0, 0.0, 0.0, 0.0, 0.0, 7.466890328078848, 0.0, 17.445833984131262,
        0.0006235601634041466, 0.0, 0.0, 6.683678146179332, 0.00037724407979611296, 1.027889937768264,
        225.20515300849274, 0.0, 0.0, 19.213238186143016, 0.0011401524586618361, 0.001237755635509985,
        176.39317598450694, 0.0, 0.0, 24.43300999870476, 0.28520802612117757, 0.0004485436923833408, 0.0, 0.0, 0.0,
        34.77906344483772, 44.835625328877896, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0008680556573291698, 0.0,
        0.0, 0.0, 0.0, 0.0, 0.0005313191874358747, 0.0, 0.00016533814161379112, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0004179171803251336, 0.0017290828234722833, 0.0, 0.0020827005846636437, 0.0, 0.0, 8.826982764996862,
        23.19243343998926, 0.0, 95.1080498811086, 0.9863978034400682, 0.9834382792465353, 0.0012286405048278493,
        171.2667255897307, 0.9807858872435379, 0.0, 0.0, 0.0, 0.0005130064588990679, 0.0, 0.00010854057858411537,
    ]

    /// The score from every scale's norms: their weighted sum, through libjxl's fitted curve, onto 100 down. (For an
    /// image with fewer than six scales the weights are taken in turn, as the reference takes them, not by position.)
    static func score(_ scales: [ScaleNorms]) -> Double {
        var sum = 0.0
        var index = 0
        for channel in 0..<3 {
            for scale in scales.indices {
                for norm in 0..<2 {
                    sum += weights[index] * abs(scales[scale].ssim[channel * 2 + norm])
                    sum += weights[index + 1] * abs(scales[scale].edge[channel * 4 + norm])
                    sum += weights[index + 2] * abs(scales[scale].edge[channel * 4 + norm + 2])
                    index += 3
                }
            }
        }
        sum *= 0.9562382616834844
        sum = 2.326765642916932 * sum - 0.020884521182843837 * sum * sum + 6.248496625763138e-05 * sum * sum * sum
        return sum > 0 ? 100 - 10 * pow(sum, 0.6276336467831387) : 100
    }
}
