// The lock this module guards shared state with: the standard library's Mutex, except in the ThreadSanitizer build,
// where Osprey's pthread-based stand-in (Sources/OspreyCodecs/Mutex+ThreadSanitizer.swift explains why) replaces it so
// that TSan sees the locking. Declared here, it also settles which of the two `Mutex`es this module means when a file
// imports both Osprey and Synchronization.
#if OSPREY_TSAN
import Osprey

typealias Mutex<Value> = Osprey.Mutex<Value>
#else
import Synchronization

typealias Mutex<Value> = Synchronization.Mutex<Value>
#endif
