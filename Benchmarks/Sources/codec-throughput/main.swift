// codec-throughput FILE ITERATIONS [--budget PIXELS] [--keep-orientation] [--colour convert|keep|ignore]
//
// Decodes FILE ITERATIONS times with ImageDecoder and prints one JSON line: {"width","height","best","median",
// "cpu","maxRSSKiB"} — seconds per decode (wall clock; "cpu": the process's CPU time of the fastest decode, every
// thread's), and the process's peak resident memory. --budget decodes downscaled to at most PIXELS pixels;
// --keep-orientation skips applying EXIF orientation (the peers never apply it); --colour sets the colour handling
// (convert to sRGB by default; ignore is colour management off).
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
if let index = arguments.firstIndex(of: "--colour"), index + 1 < arguments.count {
    switch arguments[index + 1] {
    case "convert": options.colorHandling = .convertToSRGB
    case "keep": options.colorHandling = .keepProfile
    case "ignore": options.colorHandling = .ignore
    default:
        FileHandle.standardError.write(Data("--colour must be convert, keep or ignore\n".utf8))
        exit(2)
    }
    arguments.removeSubrange(index...index + 1)
}
guard arguments.count == 2, let iterations = Int(arguments[1]), iterations > 0,
    let data = FileManager.default.contents(atPath: arguments[0])
else {
    FileHandle.standardError.write(
        Data(
            "usage: codec-throughput FILE ITERATIONS [--budget PIXELS] [--keep-orientation] [--colour MODE]\n".utf8))
    exit(2)
}
let bytes = [UInt8](data)
/// The CPU time of every thread of the process so far, in seconds.
func processCPU() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
var times: [(wall: Double, cpu: Double)] = []
var size = (0, 0)
for _ in 0..<iterations {
    let cpu = processCPU()
    let start = DispatchTime.now().uptimeNanoseconds
    let image = try ImageDecoder.decode(bytes, options: options)
    times.append((Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, processCPU() - cpu))
    size = (image.width, image.height)
}
times.sort { $0.wall < $1.wall }
var usage = rusage()
getrusage(RUSAGE_SELF.rawValue, &usage)
print(
    #"{"width":\#(size.0),"height":\#(size.1),"best":\#(times[0].wall),"median":\#(times[times.count / 2].wall),"cpu":\#(times[0].cpu),"maxRSSKiB":\#(usage.ru_maxrss)}"#
)
