# Packages a free-running RTL stream kernel (ap_ctrl_none) into a Vitis kernel object (.xo).
#
#   vivado -mode batch -source package_kernel.tcl -tclargs <kernel> <xo_path> <part> <platform> <src.v>...
#
# <kernel>   top module, also the kernel name: a module with ap_clk, ap_rst_n, and AXI4-Stream ports
#            s_axis_* (slave) and m_axis_* (master), e.g. sobel_axis from scripts/vitis/sobel_axis.v.
# <xo_path>  the .xo to write (overwritten). The IP and a scratch project go beside it.
# <part>     the FPGA part to package for, or "auto" to ask `platforminfo` for <platform>'s part.
# <platform> the Vitis platform (name or .xpfm path); only read when <part> is "auto".
# <src.v>    the wrapper and the generated kernel Verilog.
#
# Called by scripts/build-xclbin.sh. The kernel has no AXI4-Lite control port and no memory port:
# it starts running when the xclbin is loaded and talks only through its two streams.

proc die {msg} {
    puts stderr "package_kernel.tcl: error: $msg"
    exit 1
}

if {$argc < 5} {
    die "usage: vivado -mode batch -source package_kernel.tcl -tclargs <kernel> <xo_path> <part|auto> <platform> <src.v>..."
}
set kernel [lindex $argv 0]
set xo_path [file normalize [lindex $argv 1]]
set part [lindex $argv 2]
set platform [lindex $argv 3]
set sources {}
foreach src [lrange $argv 4 end] {
    if {![file exists $src]} { die "source file not found: $src" }
    lappend sources [file normalize $src]
}

file mkdir [file dirname $xo_path]

# The IP must name a part. It only sets the family the IP claims to support: v++ synthesises the
# kernel again inside the platform, so take the platform's own part to keep the two consistent.
# platforminfo's JSON names it in a "part" field (older releases: "fpgaPart").
if {$part eq "auto"} {
    set platforminfo platforminfo
    if {[info exists ::env(XILINX_VITIS)]} {
        set platforminfo [file join $::env(XILINX_VITIS) bin platforminfo]
    }
    set json [file join [file dirname $xo_path] "${kernel}_platforminfo.json"]
    if {[catch {exec $platforminfo -f -j -o $json -p $platform 2>@1} msg]} {
        die "platforminfo could not read platform '$platform' (pass a part instead of auto): $msg"
    }
    set fd [open $json r]
    set info [read $fd]
    close $fd
    if {![regexp {"part"\s*:\s*"([^"]+)"} $info -> part] &&
        ![regexp {"fpgaPart"\s*:\s*"([^"]+)"} $info -> part]} {
        die "no part in platforminfo's description of '$platform' (pass a part instead of auto)"
    }
}
puts "package_kernel.tcl: packaging $kernel for part $part into $xo_path"

set work [file join [file dirname $xo_path] "${kernel}_pkg"]
set ip_dir [file join $work ip]
file delete -force $work
file mkdir $work

# A scratch project holding the sources, packaged as IP with the sources copied in.
create_project -force -part $part "${kernel}_pkg" [file join $work project]
add_files -norecurse $sources
set_property top $kernel [current_fileset]
update_compile_order -fileset sources_1
ipx::package_project -root_dir $ip_dir -vendor spork -library kernel -taxonomy /KernelIP \
    -import_files -set_current false
ipx::unload_core [file join $ip_dir component.xml]
ipx::edit_ip_in_project -upgrade true -name "${kernel}_edit" -directory $ip_dir \
    [file join $ip_dir component.xml]
set core [ipx::current_core]

# Interfaces: package_project normally infers them from the port names; infer any it missed so the
# kernel always has exactly ap_clk, ap_rst_n (active low), s_axis and m_axis.
if {[llength [ipx::get_bus_interfaces ap_clk -of_objects $core]] == 0} {
    ipx::infer_bus_interface ap_clk xilinx.com:signal:clock_rtl:1.0 $core
}
if {[llength [ipx::get_bus_interfaces ap_rst_n -of_objects $core]] == 0} {
    ipx::infer_bus_interface ap_rst_n xilinx.com:signal:reset_rtl:1.0 $core
}
if {[llength [ipx::get_bus_interfaces s_axis -of_objects $core]] == 0 ||
    [llength [ipx::get_bus_interfaces m_axis -of_objects $core]] == 0} {
    ipx::infer_bus_interfaces xilinx.com:interface:axis_rtl:1.0 $core
}
foreach busif {s_axis m_axis} {
    if {[llength [ipx::get_bus_interfaces $busif -of_objects $core]] == 0} {
        die "no AXI4-Stream interface '$busif' inferred on $kernel (ports must be named ${busif}_t*)"
    }
}
set rst [ipx::get_bus_interfaces ap_rst_n -of_objects $core]
if {[llength [ipx::get_bus_parameters POLARITY -of_objects $rst]] == 0} {
    ipx::add_bus_parameter POLARITY $rst
}
set_property value ACTIVE_LOW [ipx::get_bus_parameters POLARITY -of_objects $rst]
ipx::associate_bus_interfaces -busif s_axis -clock ap_clk $core
ipx::associate_bus_interfaces -busif m_axis -clock ap_clk $core
ipx::associate_bus_interfaces -clock ap_clk -reset ap_rst_n $core

# Vitis kernel properties: an RTL kernel with no control protocol (free-running); the platform
# sets the clock, so the IP's own FREQ_HZ is ignored.
set_property sdx_kernel true $core
set_property sdx_kernel_type rtl $core
set_property vitis_drc {ctrl_protocol ap_ctrl_none} $core
set_property ipi_drc {ignore_freq_hz true} $core

set_property core_revision 1 $core
ipx::create_xgui_files $core
ipx::update_checksums $core
# -kernel adds the Vitis kernel rules (clock on every interface, control protocol) to the checks.
ipx::check_integrity -kernel $core
ipx::save_core $core
close_project -delete

package_xo -force -xo_path $xo_path -kernel_name $kernel -ip_directory $ip_dir -ctrl_protocol ap_ctrl_none
if {![file exists $xo_path]} { die "package_xo did not write $xo_path" }
puts "package_kernel.tcl: wrote $xo_path"
