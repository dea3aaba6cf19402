package metal

// objcPrototypes holds, for every selector the device layer sends (device_selectors.go,
// and the darwin tests' own), the method's declaration as Apple's SDK headers write it
// (Metal: MTLDevice.h, MTLCommandQueue.h, MTLCommandBuffer.h, MTLComputeCommandEncoder.h,
// MTLComputePipeline.h, MTLLibrary.h, MTLBuffer.h, MTLResidencySet.h; Foundation:
// NSObject.h, NSString.h, NSArray.h, NSDictionary.h, NSError.h, NSProcessInfo.h;
// properties written as their getter or setter). device_selectors_test.go parses each
// declaration into argument and return kinds with the sizes of the C structs
// (objcCTypes), lowers them as AAPCS64 does, and checks every send site in the darwin
// code against the result, on any platform: the sender's arity and register kinds, a
// struct over 16 bytes passed as a pointer to a Go struct of the C struct's size, a BOOL
// result masked to its low byte, a void result unused.
var objcPrototypes = map[string]string{
	// Foundation and the runtime
	"retain":                           "- (instancetype)retain;",
	"release":                          "- (oneway void)release;",
	"respondsToSelector:":              "- (BOOL)respondsToSelector:(SEL)aSelector;",
	"instancesRespondToSelector:":      "+ (BOOL)instancesRespondToSelector:(SEL)aSelector;",
	"alloc":                            "+ (instancetype)alloc;",
	"new":                              "+ (instancetype)new;",
	"processInfo":                      "+ (NSProcessInfo *)processInfo;",
	"count":                            "- (NSUInteger)count;",
	"objectAtIndex:":                   "- (id)objectAtIndex:(NSUInteger)index;",
	"localizedDescription":             "- (NSString *)localizedDescription;",
	"UTF8String":                       "- (const char *)UTF8String;",
	"lengthOfBytesUsingEncoding:":      "- (NSUInteger)lengthOfBytesUsingEncoding:(NSStringEncoding)enc;",
	"initWithBytes:length:encoding:":   "- (instancetype)initWithBytes:(const void *)bytes length:(NSUInteger)len encoding:(NSStringEncoding)encoding;",
	"setObject:forKey:":                "- (void)setObject:(id)anObject forKey:(id<NSCopying>)aKey;",
	"isOperatingSystemAtLeastVersion:": "- (BOOL)isOperatingSystemAtLeastVersion:(NSOperatingSystemVersion)version;",
	"operatingSystemVersionString":     "- (NSString *)operatingSystemVersionString;",

	// MTLDevice
	"name":                         "- (NSString *)name;",
	"maxBufferLength":              "- (NSUInteger)maxBufferLength;",
	"maxThreadgroupMemoryLength":   "- (NSUInteger)maxThreadgroupMemoryLength;",
	"recommendedMaxWorkingSetSize": "- (uint64_t)recommendedMaxWorkingSetSize;",
	"supportsFamily:":              "- (BOOL)supportsFamily:(MTLGPUFamily)gpuFamily;",
	"newCommandQueue":              "- (id<MTLCommandQueue>)newCommandQueue;",
	"newBufferWithLength:options:": "- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;",
	"newBufferWithBytesNoCopy:length:options:deallocator:": "- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void *)pointer length:(NSUInteger)length " +
		"options:(MTLResourceOptions)options deallocator:(void (^)(void *pointer, NSUInteger length))deallocator;",
	"newLibraryWithSource:options:error:":        "- (id<MTLLibrary>)newLibraryWithSource:(NSString *)source options:(MTLCompileOptions *)options error:(NSError **)error;",
	"newComputePipelineStateWithFunction:error:": "- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction error:(NSError **)error;",
	"newResidencySetWithDescriptor:error:":       "- (id<MTLResidencySet>)newResidencySetWithDescriptor:(MTLResidencySetDescriptor *)desc error:(NSError **)error;",

	// MTLCompileOptions
	"setFastMathEnabled:":            "- (void)setFastMathEnabled:(BOOL)fastMathEnabled;",
	"setMathMode:":                   "- (void)setMathMode:(MTLMathMode)mathMode;",
	"setMathFloatingPointFunctions:": "- (void)setMathFloatingPointFunctions:(MTLMathFloatingPointFunctions)mathFloatingPointFunctions;",
	"setLanguageVersion:":            "- (void)setLanguageVersion:(MTLLanguageVersion)languageVersion;",
	"setPreprocessorMacros:":         "- (void)setPreprocessorMacros:(NSDictionary<NSString *, NSObject *> *)preprocessorMacros;",

	// MTLLibrary, MTLComputePipelineState
	"newFunctionWithName:":          "- (id<MTLFunction>)newFunctionWithName:(NSString *)functionName;",
	"functionNames":                 "- (NSArray<NSString *> *)functionNames;",
	"maxTotalThreadsPerThreadgroup": "- (NSUInteger)maxTotalThreadsPerThreadgroup;",
	"threadExecutionWidth":          "- (NSUInteger)threadExecutionWidth;",
	"staticThreadgroupMemoryLength": "- (NSUInteger)staticThreadgroupMemoryLength;",

	// MTLCommandQueue, MTLCommandBuffer
	"commandBuffer":                         "- (id<MTLCommandBuffer>)commandBuffer;",
	"commandBufferWithUnretainedReferences": "- (id<MTLCommandBuffer>)commandBufferWithUnretainedReferences;",
	"addResidencySet:":                      "- (void)addResidencySet:(id<MTLResidencySet>)residencySet;",
	"removeResidencySet:":                   "- (void)removeResidencySet:(id<MTLResidencySet>)residencySet;",
	"computeCommandEncoder":                 "- (id<MTLComputeCommandEncoder>)computeCommandEncoder;",
	"commit":                                "- (void)commit;",
	"waitUntilCompleted":                    "- (void)waitUntilCompleted;",
	"status":                                "- (MTLCommandBufferStatus)status;",
	"error":                                 "- (NSError *)error;",
	"code":                                  "- (NSInteger)code;",

	// MTLComputeCommandEncoder
	"setComputePipelineState:":                    "- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;",
	"setBuffer:offset:atIndex:":                   "- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;",
	"setBufferOffset:atIndex:":                    "- (void)setBufferOffset:(NSUInteger)offset atIndex:(NSUInteger)index;",
	"setBytes:length:atIndex:":                    "- (void)setBytes:(const void *)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;",
	"setThreadgroupMemoryLength:atIndex:":         "- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;",
	"dispatchThreadgroups:threadsPerThreadgroup:": "- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;",
	"endEncoding":                                 "- (void)endEncoding;",

	// MTLBuffer, MTLResidencySet
	"contents":          "- (void *)contents;",
	"addAllocation:":    "- (void)addAllocation:(id<MTLAllocation>)allocation;",
	"removeAllocation:": "- (void)removeAllocation:(id<MTLAllocation>)allocation;",
	"requestResidency":  "- (void)requestResidency;",
	"endResidency":      "- (void)endResidency;",
	"allocationCount":   "- (NSUInteger)allocationCount;",
}

// objcCTypes gives each C type the declarations use its kind: "int" (an integer or enum
// in one register: NSUInteger, BOOL, SEL, MTL*Options/Mode/Status/Type), "id" (an
// object or block pointer), "ptr" (a pointer to memory: void *, const char *), "errptr"
// (NSError **, an out-pointer to an object) or "struct N" (a C struct of N bytes).
// Object pointer types (NSString *, MTLCompileOptions *, id<...>) are recognised by
// form and need no entry.
var objcCTypes = map[string]string{
	"void":                          "void",
	"oneway void":                   "void",
	"BOOL":                          "int",
	"SEL":                           "int",
	"NSUInteger":                    "int",
	"NSInteger":                     "int",
	"uint64_t":                      "int",
	"NSStringEncoding":              "int",
	"MTLResourceOptions":            "int",
	"MTLMathMode":                   "int",
	"MTLMathFloatingPointFunctions": "int",
	"MTLLanguageVersion":            "int",
	"MTLCommandBufferStatus":        "int",
	"MTLDispatchType":               "int",
	"MTLBarrierScope":               "int",
	"MTLGPUFamily":                  "int",
	"id":                            "id",
	"instancetype":                  "id",
	"void *":                        "ptr",
	"const void *":                  "ptr",
	"const char *":                  "ptr",
	"NSError **":                    "errptr",
	"MTLSize":                       "struct 24", // {NSUInteger width, height, depth}
	"NSOperatingSystemVersion":      "struct 24", // {NSInteger majorVersion, minorVersion, patchVersion}
	"MTLRegion":                     "struct 48", // {MTLOrigin origin; MTLSize size}, unused
	"NSRange":                       "struct 16", // {NSUInteger location, length}, unused: would need two registers
	"CFTimeInterval":                "float 8",   // double: returned in d0, which SyscallN does not give back
}

// objcGoStructs names the Go type that mirrors each C struct passed by the device.
var objcGoStructs = map[string]string{
	"MTLSize":                  "mtlSize",
	"NSOperatingSystemVersion": "nsOperatingSystemVersion",
}
