// codec-throughput FILE ITERATIONS [PIXEL_BUDGET]
//
// Decodes FILE ITERATIONS times with ImageDecoder (downscaled to PIXEL_BUDGET pixels when given) and prints one JSON
// line: {"width","height","best","median","maxRSSKiB"} — seconds per decode, and the process's peak resident memory.
import Foundation
import OspreyCodecs

let arguments = CommandLine.arguments
guard arguments.count >= 3, let iterations = Int(arguments[2]), iterations > 0,
    let data = FileManager.default.contents(atPath: arguments[1])
else {
    FileHandle.standardError.write(Data("usage: codec-throughput FILE ITERATIONS [PIXEL_BUDGET]\n".utf8))
    exit(2)
}
let bytes = [UInt8](data)
var options = DecodingOptions()
if arguments.count >= 4, let budget = Int(arguments[3]) { options.pixelBudget = budget }

var times: [Double] = []
var size = (0, 0)
for _ in 0..<iterations {
    let start = DispatchTime.now().uptimeNanoseconds
    let image = try ImageDecoder.decode(bytes, options: options)
    times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
    size = (image.width, image.height)
}
times.sort()
var usage = rusage()
getrusage(RUSAGE_SELF, &usage)
print(
    #"{"width":\#(size.0),"height":\#(size.1),"best":\#(times[0]),"median":\#(times[times.count / 2]),"maxRSSKiB":\#(usage.ru_maxrss)}"#
)
