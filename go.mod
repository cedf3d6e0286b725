module github.com/mmkgpu/mmk

go 1.26.8

require github.com/NVIDIA/go-nvml v0.13.4-0
