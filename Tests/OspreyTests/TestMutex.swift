// The lock the tests share state with their callbacks through: the standard library's Mutex, except in the
// ThreadSanitizer build, where Osprey's pthread-based stand-in (see Mutex+ThreadSanitizer.swift) replaces it so that
// TSan sees the locking. Declared here, it also settles which of the two `Mutex`es the tests mean.
#if OSPREY_TSAN
import Osprey

typealias Mutex<Value> = Osprey.Mutex<Value>
#else
import Synchronization

typealias Mutex<Value> = Synchronization.Mutex<Value>
#endif
