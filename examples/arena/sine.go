package arena

// quarterSine holds sin(2πi/256) in 16.16 fixed point for i = 0…64, rounded
// once when this file was written, so that the simulation never evaluates a
// floating-point function. sine extends it to the whole circle.
var quarterSine = [65]int32{
	0, 1608, 3216, 4821, 6424, 8022, 9616, 11204,
	12785, 14359, 15924, 17479, 19024, 20557, 22078, 23586,
	25080, 26558, 28020, 29466, 30893, 32303, 33692, 35062,
	36410, 37736, 39040, 40320, 41576, 42806, 44011, 45190,
	46341, 47464, 48559, 49624, 50660, 51665, 52639, 53581,
	54491, 55368, 56212, 57022, 57798, 58538, 59244, 59914,
	60547, 61145, 61705, 62228, 62714, 63162, 63572, 63944,
	64277, 64571, 64827, 65043, 65220, 65358, 65457, 65516,
	65536,
}

// sine returns sin(2π·a/256) in 16.16 fixed point.
func sine(a uint8) int32 {
	switch i := int(a); {
	case i <= 64:
		return quarterSine[i]
	case i <= 128:
		return quarterSine[128-i]
	case i <= 192:
		return -quarterSine[i-128]
	default:
		return -quarterSine[256-i]
	}
}

// cosine returns cos(2π·a/256) in 16.16 fixed point.
func cosine(a uint8) int32 { return sine(a + 64) }
