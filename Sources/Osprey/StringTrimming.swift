extension StringProtocol {
    /// The text without white space (spaces, tabs, line ends) at either end.
    ///
    /// Foundation's `trimmingCharacters(in:)` goes through `NSString` and is not part of FoundationEssentials, the
    /// only part of Foundation the library, the server and the command-line tool link: the rest would bring its
    /// Objective-C-shaped classes and ICU's tables into every executable, and milliseconds into every start.
    package func trimmingWhitespace() -> String {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map(index(after:)) ?? start
        return String(self[start..<end])
    }
}
