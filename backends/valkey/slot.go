package valkey

import "strings"

// slot is a key's Redis Cluster hash slot: CRC16 (XMODEM) of the key, or
// of its hash tag (the text between the first '{' and the next '}', when
// not empty), modulo 16384. valkey-go computes it too, but does not export
// it, and panics on a multi-key command whose keys' slots differ.
func slot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc & 16383
}
