// codec-throughput FILE ITERATIONS [--budget PIXELS] [--keep-orientation]
//
// Decodes FILE ITERATIONS times with ImageDecoder and prints one JSON line: {"width","height","best","median",
// "maxRSSKiB"} — seconds per decode, and the process's peak resident memory. --budget decodes downscaled to at most
// PIXELS pixels; --keep-orientation skips applying EXIF orientation (the peers never apply it).
import Foundation
import OspreyCodecs

var arguments = Array(CommandLine.arguments.dropFirst())
var options = DecodingOptions()
if let index = arguments.firstIndex(of: "--keep-orientation") {
    options.keepsStoredOrientation = true
    arguments.remove(at: index)
}
if let index = arguments.firstIndex(of: "--budget"), index + 1 < arguments.count, let budget = Int(arguments[index + 1])
{
    options.pixelBudget = budget
    arguments.removeSubrange(index...index + 1)
}
guard arguments.count == 2, let iterations = Int(arguments[1]), iterations > 0,
    let data = FileManager.default.contents(atPath: arguments[0])
else {
    FileHandle.standardError.write(
        Data("usage: codec-throughput FILE ITERATIONS [--budget PIXELS] [--keep-orientation]\n".utf8))
    exit(2)
}
let bytes = [UInt8](data)
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
getrusage(RUSAGE_SELF.rawValue, &usage)
print(
    #"{"width":\#(size.0),"height":\#(size.1),"best":\#(times[0]),"median":\#(times[times.count / 2]),"maxRSSKiB":\#(usage.ru_maxrss)}"#
)
