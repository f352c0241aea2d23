package device_test

import (
	"errors"
	"fmt"
	"strings"

	_ "github.com/extensor/extensor/cpu" // registers "cpu"
	"github.com/extensor/extensor/device"
)

func ExampleOpen() {
	dev, err := device.Open("cpu")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	fmt.Println(dev.Name(), dev.Supports(device.Float64))

	// A backend that was not imported gets a hint.
	_, err = device.Open("webgpu")
	fmt.Println(errors.Is(err, device.ErrNotRegistered), strings.Contains(err.Error(), "forgotten import?"))
	// Output:
	// cpu true
	// true true
}
